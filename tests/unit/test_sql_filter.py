"""SQL92 filters: RocketMQ's grammar and evaluation rules, quirks included, and the parse errors.

Each row runs through the specialised closures and the generic path, which must agree.
"""

import pytest

from rockmq.filter import sql
from rockmq.filter.sql import IllegalExpression, compile_sql
from rockmq.filter.tags import IllegalExpression as TagsIllegalExpression

X = {"a": "x"}
CASES = [
    # string equality: values and property names are case-sensitive
    ("a = 'x'", X, None, True),
    ("a = 'x'", {"a": "X"}, None, False),
    ("a = 'x'", {}, None, False),
    ("A = 'x'", X, None, False),
    ("a = 'it''s'", {"a": "it's"}, None, True),
    ("a = ''", {"a": ""}, None, True),
    ("$a_1 = 'x'", {"$a_1": "x"}, None, True),
    ("a <> 'x'", {"a": "y"}, None, True),
    ("a <> 'x'", X, None, False),
    ("a <> 'x'", {}, None, False),  # UNKNOWN
    # a NULL on the right only is FALSE, not UNKNOWN (doCreateEqual)
    ("'x' = a", X, None, True),
    ("'x' = a", {}, None, False),
    ("'x' <> a", {}, None, True),
    ("NOT ('x' = a)", {}, None, True),
    ("NOT (a = 'x')", {}, None, False),
    ("a = b", {}, None, True),  # both NULL
    ("a = b", {"a": "1"}, None, False),
    ("a = b", {"a": "1", "b": "1"}, None, True),
    ("a = b", {"a": "1", "b": "01"}, None, False),  # two strings compare as strings
    ("a <> b", {"a": "1"}, None, True),
    ("a <> b", {"b": "1"}, None, False),
    # numbers: the property is parsed as the literal's Java type
    ("n = 5", {"n": "5"}, None, True),
    ("n = 5", {"n": "05"}, None, True),
    ("n = 5", {"n": "+5"}, None, True),
    ("n = 5", {"n": "-5"}, None, False),
    ("n = 5", {"n": "\u0665"}, None, True),  # Java's Character.digit takes any Unicode decimal digit
    ("n = 5", {"n": "5.0"}, None, False),  # Integer.parseInt fails: an error, no match
    ("n = 5", {"n": " 5"}, None, False),
    ("n = 5", {"n": "five"}, None, False),
    ("n = 5", {"n": "3000000000"}, None, False),  # beyond Integer
    ("n = 3000000000", {"n": "3000000000"}, None, True),  # a Long literal
    ("n = 5L", {"n": "5"}, None, True),
    ("n = 5.0", {"n": "5"}, None, True),
    ("n = 5.0", {"n": " 5 "}, None, True),  # Double.parseDouble trims
    ("n = 5.0", {"n": "5d"}, None, True),
    ("n = 5.0", {"n": "0x1.4p2"}, None, True),
    ("n = 5.0", {"n": "5_0"}, None, False),
    ("n = .5", {"n": "0.5"}, None, True),
    ("n = 5E2", {"n": "500"}, None, True),
    ("n = -5", {"n": "-5"}, None, True),
    ("n = - -5", {"n": "5"}, None, True),
    ("n = +5", {"n": "5"}, None, True),
    ("5 = n", {"n": "5"}, None, True),
    ("5 = n", {}, None, False),
    ("n <> 5", {"n": "6"}, None, True),
    ("n <> 5", {"n": "x"}, None, False),  # the conversion error wins over NOT
    ("n > 5", {"n": "10"}, None, True),
    ("n > 5", {"n": "5"}, None, False),
    ("n > 5", {"n": "abc"}, None, False),
    ("n > 5", {}, None, False),
    ("NOT (n > 5)", {"n": "3"}, None, True),
    ("NOT (n > 5)", {"n": "abc"}, None, False),
    ("NOT (n > 5)", {}, None, False),
    ("n >= 5", {"n": "5"}, None, True),
    ("n < 5", {"n": "-7"}, None, True),
    ("n <= -5", {"n": "-5"}, None, True),
    ("5 < n", {"n": "6"}, None, True),
    ("5 < n", {"n": "4"}, None, False),
    ("n > 3.1E10", {"n": str(3.1415e10)}, None, True),
    ("n > 3.14", {"n": "3.1415"}, None, True),
    ("n > 5.5", {"n": "NaN"}, None, True),  # Double.compareTo sorts NaN above everything
    ("n < 5.5", {"n": "NaN"}, None, False),
    ("n > 5.5", {"n": "Infinity"}, None, True),
    ("n > 5.5", {"n": "inf"}, None, False),  # not Java syntax
    ("n > 5", {"n": "5.5"}, None, False),  # an Integer literal wants an integer
    ("n > 5.0", {"n": "5.5"}, None, True),
    ("a > b", {"a": "20", "b": "10"}, None, True),  # two properties: both as Double
    ("a > b", {"a": "10", "b": "20"}, None, False),
    ("a > b", {"a": "1.5", "b": "1"}, None, True),
    ("a > b", {"a": "x", "b": "1"}, None, False),
    ("a > b", {"a": "1"}, None, False),
    ("n BETWEEN 2 AND 10", {"n": "2"}, None, True),
    ("n BETWEEN 2 AND 10", {"n": "10"}, None, True),
    ("n BETWEEN 2 AND 10", {"n": "11"}, None, False),
    ("n BETWEEN 2 AND 10", {"n": "1"}, None, False),
    ("n BETWEEN 2 AND 10", {}, None, False),
    ("n NOT BETWEEN 2 AND 10", {"n": "1"}, None, True),
    ("n NOT BETWEEN 2 AND 10", {"n": "11"}, None, True),
    ("n NOT BETWEEN 2 AND 10", {"n": "5"}, None, False),
    ("n NOT BETWEEN 2 AND 10", {}, None, False),
    ("n BETWEEN -5 AND 5", {"n": "-5"}, None, True),
    ("n BETWEEN 5 AND -5", {"n": "0"}, None, False),  # negated bounds are not literals: not checked
    ("n BETWEEN 1.5 AND 2", {"n": "1.7"}, None, False),  # 1.7 <= 2 parses 1.7 as an Integer
    ("n BETWEEN 1.5 AND 2.0", {"n": "1.7"}, None, True),
    ("n = -b", {}, None, True),  # -b is NULL (a negated string), so is n
    ("n = -b", {"n": "1"}, None, False),
    # booleans
    ("TRUE", {}, None, True),
    ("FALSE", {}, None, False),
    ("NULL", {}, None, False),
    ("NOT FALSE", {}, None, True),
    ("NOT NULL", {}, None, False),
    ("TRUE = TRUE", {}, None, True),
    ("5 = TRUE", {}, None, False),
    ("a = TRUE", {"a": "true"}, None, True),
    ("a = TRUE", {"a": "TrUe"}, None, True),
    ("a = TRUE", {"a": "yes"}, None, False),
    ("a = FALSE", {"a": "no"}, None, True),  # Boolean.valueOf: anything but "true" is false
    ("a = FALSE", {}, None, False),
    ("TRUE = a", {"a": "true"}, None, False),  # RocketMQ casts the Boolean to String: an error
    ("NOT (TRUE = a)", {"a": "true"}, None, False),
    ("NOT (TRUE = a)", {}, None, True),
    ("a", {"a": "true"}, None, False),  # a property as a condition: never a Boolean
    ("NOT a", {"a": "true"}, None, True),
    ("NOT a", {}, None, False),
    ("(a = 'x') = TRUE", X, None, True),
    ("(a = 'x') = FALSE", {"a": "y"}, None, True),
    # NULL
    ("a IS NULL", {}, None, True),
    ("a IS NULL", {"a": ""}, None, False),
    ("a IS NOT NULL", {"a": ""}, None, True),
    ("a IS NOT NULL", {}, None, False),
    ("NOT (a IS NULL)", {}, None, False),
    ("a IS NULL OR a = 'hello'", {}, None, True),
    ("a IS NOT NULL AND a = 'hello'", {"a": "hello"}, None, True),
    # three-valued AND/OR/NOT, evaluated left to right
    ("a = 'x' OR b = 'y'", {"b": "y"}, None, True),
    ("a = 'x' AND b = 'y'", {"b": "y"}, None, False),
    ("NOT (a = 'x' AND b = 'y')", {"b": "y"}, None, False),  # NOT UNKNOWN
    ("NOT (a = 'x' AND b = 'y')", {"b": "z"}, None, True),  # UNKNOWN AND FALSE is FALSE
    ("NOT (a = 'x' OR b = 'y')", {"b": "z"}, None, False),  # UNKNOWN OR FALSE is UNKNOWN
    ("a = 'x' OR n > 5", {"a": "x", "n": "abc"}, None, True),  # stops before the bad conversion
    ("n > 5 OR a = 'x'", {"a": "x", "n": "abc"}, None, False),  # the conversion fails first
    ("NOT (a = 'x' AND n > 5)", {"a": "y", "n": "abc"}, None, True),
    ("NOT (n > 5 AND a = 'x')", {"a": "y", "n": "abc"}, None, False),
    ("a = 'x' AND b = 'y' AND c = 'z'", {"a": "x", "b": "y", "c": "z"}, None, True),
    ("a = 'x' OR b = 'y' OR c = 'z'", {"c": "z"}, None, True),
    # IN
    ("a IN ('x', 'y')", {"a": "y"}, None, True),
    ("a IN ('x', 'y')", {"a": "z"}, None, False),
    ("a IN ('x', 'y')", {}, None, False),
    ("a NOT IN ('x', 'y')", {"a": "z"}, None, True),
    ("a NOT IN ('x', 'y')", {"a": "x"}, None, False),
    ("a NOT IN ('x', 'y')", {}, None, False),
    ("NOT (a IN ('x'))", {}, None, False),
    ("a IN ('3', '4', '5')", {"a": "4"}, None, True),
    ("a IN ('5')", {"a": "05"}, None, False),  # IN compares strings
    # CONTAINS, STARTSWITH, ENDSWITH: FALSE (not UNKNOWN) on a missing value or an empty search
    ("a CONTAINS 'ell'", {"a": "hello"}, None, True),
    ("a CONTAINS 'elx'", {"a": "hello"}, None, False),
    ("a CONTAINS ''", {"a": "hello"}, None, False),
    ("a NOT CONTAINS ''", {"a": "hello"}, None, False),
    ("a NOT CONTAINS 'x'", {"a": "hello"}, None, True),
    ("a NOT CONTAINS 'x'", {}, None, False),
    ("NOT (a CONTAINS 'x')", {}, None, True),
    ("a STARTSWITH 'he'", {"a": "hello"}, None, True),
    ("a STARTSWITH 'lo'", {"a": "hello"}, None, False),
    ("a NOT STARTSWITH 'lo'", {"a": "hello"}, None, True),
    ("a ENDSWITH 'lo'", {"a": "hello"}, None, True),
    ("a NOT ENDSWITH 'lo'", {"a": "hello"}, None, False),
    ("a NOT ENDSWITH 'lo'", {}, None, False),
    ("NOT a CONTAINS 'x'", X, None, False),  # (NOT a) is a Boolean: never contains anything
    # precedence: OR < AND < = <> IS < > BETWEEN IN CONTAINS < unary NOT
    ("a = '1' OR b = '1' AND c = '1'", {"a": "1"}, None, True),
    ("(a = '1' OR b = '1') AND c = '1'", {"a": "1"}, None, False),
    ("NOT a = 'x'", X, None, False),  # (NOT a) = 'x'
    ("NOT a = 'x'", {"a": "y"}, None, False),
    ("NOT a = TRUE", {"a": "anything"}, None, True),  # (NOT a) is TRUE for any present a
    ("NOT a IS NULL", {}, None, True),  # (NOT a) IS NULL
    ("NOT NOT (a = 'x')", X, None, True),
    ("((a = 'x'))", X, None, True),
    # keywords ignore case
    ("a = 'x' and b = 'y' Or c iS nOt NuLl", {"c": "1"}, None, True),
    ("n between 1 and 3 AND a in ('x') and a not contains 'q'", {"n": "2", "a": "x"}, None, True),
    ("true", {}, None, True),
    ("a startsWith 'x' AnD a EndsWith 'x'", X, None, True),
    # TAGS is the tag, nothing else
    ("TAGS = 'a'", {}, "a", True),
    ("TAGS = 'a'", {"TAGS": "a"}, None, False),
    ("TAGS = 'a'", {}, "b", False),
    ("TAGS IS NULL", {}, None, True),
    ("TAGS IN ('t1', 't2')", {}, "t2", True),
    ("TAGS CONTAINS 'ag'", {}, "tag", True),
    ("TAGS CONTAINS 'ag'", {}, None, False),
    ("tags = 'a'", {}, "a", False),
    ("TAGS is not null and TAGS='''''tag'''''", {}, "''tag''", True),
    ("TAGS <> 'a'", {}, "b", True),
    ("TAGS > 5", {}, "7", True),
    # comments and white space
    ("a = 'x' -- a comment", X, None, True),
    ("/* a comment */ a = 'x'", X, None, True),
    ("a\n=\t'x'\r\n", X, None, True),
    ("a = 'x'--", X, None, True),
]


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "generic"])
@pytest.mark.parametrize("expression, props, tag, expected", CASES)
def test_evaluation(expression, props, tag, expected, fast):
    assert sql._compile_sql(expression, fast)(props, tag) is expected


ERRORS = [
    ("", "empty expression"),
    ("  -- nothing", "empty expression"),
    ("a = 'x", "unterminated string literal at column 5"),
    ("/* x", "unterminated comment at column 1"),
    ("a = 1 AND AND b = 2", "unexpected 'AND' at column 11"),
    ("a = 'x' AND", "unexpected end of expression at column 12"),
    ("a = 1.2.3", "malformed number '1.2.3' at column 5"),
    ("a = 12abc", "malformed number '12abc' at column 5"),
    ("a != 'x'", "unknown operator '!=' (use = or <>) at column 3"),
    ("a == 'x'", "unknown operator '=='"),
    ("a ~ 'x'", "unexpected character '~' at column 3"),
    ("a = 'x' b = 'y'", "unexpected 'b' at column 9; expected AND, OR or the end of the expression"),
    ("(a = 'x'", "unexpected end of expression at column 9; expected ')'"),
    ("a = 'x')", "unexpected ')' at column 8"),
    ("a = NULL", "NULL cannot be compared with '=' (use IS NULL) at column 3"),
    ("NULL <> a", "NULL cannot be compared with '<>'"),
    ("a > 'x'", "'x' cannot be compared with '>' at column 3"),
    ("a > TRUE", "TRUE cannot be compared with '>'"),
    ("NOT a > 5", "NOT a cannot be compared with '>' at column 7"),
    ("a BETWEEN 10 AND 2", "BETWEEN bounds out of order: 10 is greater than 2 at column 3"),
    ("a BETWEEN NULL AND 2", "BETWEEN bounds cannot be NULL"),
    ("a BETWEEN 1 OR 2", "unexpected 'OR' at column 13; expected AND"),
    ("a IN ()", "unexpected ')' at column 7; expected a string literal"),
    ("a IN ('x', 5)", "unexpected '5' at column 12; expected a string literal"),
    ("a IN 'x'", "expected '(' after IN"),
    ("a CONTAINS 5", "expected a string literal"),
    ("'x' IN ('x')", "IN needs a property on its left, not 'x' at column 5"),
    ("TRUE = 5", "TRUE cannot be compared with 5 at column 6"),
    ("a = 99999999999999999999", "integer literal 99999999999999999999 is out of range at column 5"),
    ("a > 0.0", "decimal literal 0.0 is out of range"),
    ("a > 1e999", "decimal literal 1e999 is out of range"),
    ("5", "5 is not a condition at column 1"),
    ("'x' AND a = 'y'", "'x' is not a condition at column 1"),
    ("-a", "-a is not a condition"),
    ("a IS 5", "unexpected '5' at column 6; expected NULL or NOT NULL after IS"),
    ("a IS NOT 5", "expected NULL after IS NOT"),
    ("a NOT LIKE 'x'", "unexpected 'LIKE' at column 7; expected BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT"),
    ("a LIKE 'x'", "unexpected 'LIKE' at column 3"),
    ("x" * 4097, "expression is 4097 characters long; the limit is 4096"),
    ("(" * 70 + "a" + ")" * 70, "nested more than 64 levels deep at column 65"),
    ("NOT " * 70 + "a", "nested more than 64 levels deep"),
    ("a IS NULL" + " IS NULL" * 70, "nested more than 64 levels deep"),
]


@pytest.mark.parametrize("expression, message", ERRORS)
def test_bad_expressions(expression, message):
    with pytest.raises(IllegalExpression) as e:
        compile_sql(expression)
    assert message in str(e.value)


def test_errors_are_the_tag_filters_exception_and_a_value_error():
    assert IllegalExpression is TagsIllegalExpression
    with pytest.raises(ValueError):
        compile_sql("a =")


def test_long_flat_expressions_are_fine():
    expression = " OR ".join(f"a = '{i}'" for i in range(300))
    assert len(expression) < 4096
    f = compile_sql(expression)
    assert f({"a": "299"}, None) and not f({"a": "300"}, None)
    assert f.index_values("a") == frozenset(str(i) for i in range(300))


@pytest.mark.parametrize("expression, props, tag, expected", CASES[::7])
def test_never_raises_on_odd_values(expression, props, tag, expected):
    f = compile_sql(expression)
    for odd in ({"a": 5, "b": None, "n": b"5", "c": object()}, {k: [v] for k, v in props.items()}):
        assert f(odd, tag) in (True, False)


def test_residuals_for_the_index():
    f = compile_sql("MessageType = 'a' AND buyerId = 5 AND amount > 100.0")
    assert f.index_values("MessageType") == {"a"}
    keys = f.index_keys("MessageType")
    assert list(keys) == ["a"] and str(keys["a"]) == "buyerId = 5 AND amount > 100.0"
    assert keys["a"]({"buyerId": "05", "amount": "100.5"}, None)
    assert f.index_keys("buyerId") is None  # a numeric equality: "5", "05" and "+5" all match


@pytest.mark.parametrize("expression, field, expected", [
    ("MessageType = 'a'", "MessageType", {"a": "TRUE"}),
    ("'a' = MessageType", "MessageType", {"a": "TRUE"}),
    ("MessageType IN ('a', 'b') OR MessageType = 'c'", "MessageType", {"a": "TRUE", "b": "TRUE", "c": "TRUE"}),
    ("x > 5 AND MessageType = 'a'", "MessageType", {"a": "x > 5"}),
    ("(MessageType = 'a' AND x = '1') OR (MessageType = 'b' AND y = '2')", "MessageType", {"a": "x = '1'", "b": "y = '2'"}),
    ("MessageType IN ('a', 'b') AND MessageType IN ('b', 'c')", "MessageType", {"b": "TRUE"}),
    ("MessageType = 'a' AND MessageType = 'b'", "MessageType", {}),
    ("FALSE", "MessageType", {}),
    ("TAGS = 't' AND a = 'x'", "TAGS", {"t": "a = 'x'"}),
    ("MessageType = 'a' OR x = 'y'", "MessageType", None),
    ("MessageType = 5", "MessageType", None),
    ("NOT (MessageType <> 'a')", "MessageType", None),
    ("MessageType NOT IN ('a')", "MessageType", None),
    ("MessageType = 'a'", "Other", None),
    # a side that may throw stays in front of what would short-circuit it
    ("(n > 5 OR MessageType = 'a') AND MessageType = 'a'", "MessageType", {"a": "n > 5 OR TRUE"}),
    ("NOT (n > 5 AND MessageType = 'b') AND MessageType = 'a'", "MessageType", {"a": "NOT (n > 5 AND FALSE)"}),
    ("NOT (MessageType = 'b' AND n > 5) AND MessageType = 'a'", "MessageType", {"a": "TRUE"}),
])
def test_index_keys(expression, field, expected):
    keys = compile_sql(expression).index_keys(field)
    assert (None if keys is None else {v: str(r) for v, r in keys.items()}) == expected
    if keys:
        assert all(r.always_true == (str(r) == "TRUE") for r in keys.values())


def test_residuals_keep_conversion_errors():
    f = compile_sql("(n > 5 OR MessageType = 'a') AND MessageType = 'a'")
    residual = f.bind("MessageType", "a")
    for props in ({"MessageType": "a", "n": "abc"}, {"MessageType": "a", "n": "1"}, {"MessageType": "a"}):
        assert residual(props, None) is f(props, None)
    assert not residual({"n": "abc"}, None) and residual({"n": "1"}, None)


def test_never_true():
    assert compile_sql("a = 'x' AND a = 'y'").never_true
    assert compile_sql("NULL OR FALSE").never_true
    assert not compile_sql("a = 'x'").never_true
