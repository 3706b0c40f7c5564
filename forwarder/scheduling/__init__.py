"""Which streams a run polls, in what order, and when it stops (DESIGN §4, Scheduling).

* ``policy``: the settings as one value (interval, budget, hot window, revisit bounds);
* ``marks``: the scheduler document (poll and delivery times, the users list, discovered actors, the
  rate bucket's level), parsed once and written back whole;
* ``priority``: the pure choice of one run's streams;
* ``actors``: the actors records name, and which of them get streams;
* ``budget``: when a run stops starting streams;
* ``scheduler``: the edge that reads and writes the document in the state store.
"""
