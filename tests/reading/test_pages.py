"""Limit/offset paging and its stop rules, without a reader's feedback (the users list reads so)."""

from __future__ import annotations

from forwarder.reading.pages import PageSize, Tally, iter_pages


def pages(fetch, limit, max_pages, outcome, sizes=None):
    """The pages' records, one list a page, as a plain loop reads them."""
    return [page.items for page in iter_pages(fetch, limit, max_pages, outcome, sizes)]


def pages_from(data, honour_offset=True, cap=None):
    calls = []

    def fetch(limit, offset):
        calls.append((limit, offset))
        if limit is None:
            return list(data)
        start = offset if honour_offset else 0
        size = min(limit, cap or limit)
        return data[start : start + size]

    return fetch, calls


def test_paging_stops_on_a_short_page():
    fetch, calls = pages_from(list(range(460)))
    outcome = Tally()
    assert sum(map(len, pages(fetch, 200, 100, outcome))) == 460
    assert calls == [(200, 0), (200, 200), (200, 400)] and outcome.reason == "short page"


def test_paging_survives_a_service_that_caps_the_page_size():
    fetch, _ = pages_from(list(range(130)), cap=25)
    assert sum(map(len, pages(fetch, 200, 100, Tally()))) == 130


def test_paging_stops_when_offset_is_ignored():
    fetch, calls = pages_from(list(range(50)), honour_offset=False, cap=25)
    outcome = Tally()
    assert sum(map(len, pages(fetch, 200, 100, outcome))) == 25
    assert outcome.reason == "repeated page" and len(calls) == 2


def test_page_cap_marks_the_outcome_truncated():
    fetch, _ = pages_from(list(range(1000)))
    outcome = Tally()
    assert sum(map(len, pages(fetch, 100, 3, outcome))) == 300
    assert outcome.truncated and "page cap" in outcome.reason


def test_a_short_page_is_the_end_only_where_the_page_size_is_known():
    sizes = PageSize(200)
    assert sizes.is_last(9)  # shorter than any service's page size
    assert not sizes.is_last(30)  # may be the service's own page size: ask past it
    sizes.saw(40, 200)
    assert sizes.is_last(30)  # a longer page came: 30 is no cap
    sizes.saw(200, 200)
    assert sizes.is_last(40) and not sizes.is_last(200)  # the limit asked is honoured


def test_a_cap_learnt_is_paged_by():
    fetch, calls = pages_from(list(range(100)), cap=30)
    sizes = PageSize(200)
    outcome = Tally()
    assert sum(map(len, pages(fetch, 200, 100, outcome, sizes))) == 100
    assert calls == [(200, 0), (200, 30), (200, 60), (200, 90)] and sizes.cap == 30
    assert sizes.size() == 30 and sizes.is_last(29) and not sizes.is_last(30)


def test_a_short_page_followed_by_nothing_teaches_nothing():
    sizes = PageSize(200)
    fetch, calls = pages_from(list(range(30)), cap=30)
    assert sum(map(len, pages(fetch, 200, 100, Tally(), sizes))) == 30
    assert len(calls) == 2 and sizes.cap is None  # the page past it was empty: nothing learnt
    assert sizes.asking.acquire(blocking=False)  # released for the next stream to ask
    sizes.asking.release()
