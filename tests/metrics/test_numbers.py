"""hiera_dspy.metrics.numbers: the one formatter every summary line, report table and bench row prints numbers with."""

from hiera_dspy.metrics.numbers import number, with_ci


def test_a_number_by_spec_or_the_missing_mark():
    assert [number(0.51234), number(12.7, ".0f"), number(0.5, ".2f"), number(None), number(None, missing="—")] == \
        ["0.512", "13", "0.50", "-", "—"]
    assert number(0) == "0.000"  # zero is a value, not a missing one


def test_a_value_with_its_interval():
    assert with_ci(0.51234, (0.4, 0.62)) == "0.512 [0.400, 0.620]"
    assert with_ci(0.5, [0.25, 0.75], label="95% CI ") == "0.500 [95% CI 0.250, 0.750]"
    assert with_ci(0.5, (None, None)) == "0.500"  # an unknown interval is left out, not printed as [-, -]
    assert with_ci(0.5, None) == "0.500"
    assert with_ci(None, (0.1, 0.2), missing="undefined") == "undefined"
