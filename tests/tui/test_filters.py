import pytest

from jobq_core.presentation.views.filters import FilterError, parse_filter


def test_prefixes_and_free_words_are_separated():
    f = parse_filter('queue:mail kind:send error:"connection refused" slow 42')
    assert (f.queue, f.kind, f.error, f.words) == ("mail", "send", "connection refused",
                                                  ("slow", "42"))


def test_free_words_must_all_appear_in_some_field_case_insensitively():
    f = parse_filter("Mail 42")
    assert f.matches(42, "mail")
    assert not f.matches(41, "mail")


def test_bad_filters_say_why():
    with pytest.raises(FilterError, match="quotation"):
        parse_filter('error:"unclosed')
    with pytest.raises(FilterError, match="status"):
        parse_filter("status:zombie")
    with pytest.raises(FilterError, match="needs a value"):
        parse_filter("queue:")


def test_empty_filter_matches_everything():
    f = parse_filter("  ")
    assert f.empty and f.matches("anything")


def test_a_text_search_of_all_or_finished_jobs_reads_the_newest_unless_scope_all():
    from jobq_core.presentation.views.filters import SEARCH_NEWEST, search_window

    assert search_window(parse_filter("timeout"), None) == SEARCH_NEWEST
    assert search_window(parse_filter('error:"refused"'), "succeeded") == SEARCH_NEWEST
    assert search_window(parse_filter("timeout"), "dead") is None  # an index bounds it
    assert search_window(parse_filter("queue:mail"), None) is None  # no text: no scan
    every = parse_filter("timeout scope:all")
    assert every.everything and every.words == ("timeout",)
    assert search_window(every, None) is None
    with pytest.raises(FilterError, match="scope"):
        parse_filter("scope:some")
