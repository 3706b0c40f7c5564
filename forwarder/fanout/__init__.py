"""Fan-out: a planner turns every tenant's streams into work items on an SQS FIFO queue (one
message group per tenant), workers run them (DESIGN §7). Pure pieces here, I/O in queue.py and
cycle.py, runtimes in handlers/aws_planner.py and handlers/aws_worker.py."""
