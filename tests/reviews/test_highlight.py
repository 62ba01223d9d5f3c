from reviews.highlight import RuleSpan, build_segments, heat_level


def words_of(body, scores):
    out, position = [], 0
    for word, score in zip(body.split(" "), scores, strict=True):
        out.append({"word": word, "start": position, "end": position + len(word), "score": score})
        position += len(word) + 1
    return out


def test_segments_cover_the_whole_body_in_order():
    body = "Our returns are guaranteed forever"
    segments = build_segments(
        body, words_of(body, [0.0, 0.5, 0.0, 1.0, -0.4]), [RuleSpan(16, 26, "GR-001 v1")]
    )
    assert "".join(s.text for s in segments) == body


def test_the_strongest_word_gets_the_top_heat_and_a_negative_word_a_negative_heat():
    body = "returns are guaranteed not"
    segments = build_segments(body, words_of(body, [0.5, 0.0, 1.0, -0.4]))
    by_text = {s.text: s for s in segments}
    assert by_text["guaranteed"].heat == 5
    assert by_text["guaranteed"].heat_class == "heat-p5"
    assert by_text["returns"].heat == 3
    assert by_text["not"].heat == -2
    assert by_text["not"].heat_class == "heat-n2"
    assert by_text["are"].heat == 0


def test_a_rule_span_marks_exactly_its_characters():
    body = "we offer guaranteed returns today"
    segments = build_segments(body, [], [RuleSpan(9, 27, "GR-001 v3")])
    marked = [s.text for s in segments if s.rules]
    assert marked == ["guaranteed returns"]
    assert segments[1].rules == ("GR-001 v3",)


def test_a_rule_span_inside_a_word_splits_the_word_but_keeps_its_heat():
    body = "guaranteed"
    segments = build_segments(body, [{"start": 0, "end": 10, "score": 1.0}], [RuleSpan(0, 5, "R")])
    assert [(s.text, s.heat, s.rules) for s in segments] == [("guara", 5, ("R",)), ("nteed", 5, ())]


def test_offsets_outside_the_body_are_ignored_rather_than_raising():
    body = "short"
    segments = build_segments(
        body,
        [{"start": 3, "end": 99, "score": 1.0}, {"start": "0", "end": 2, "score": 1.0}],
        [RuleSpan(-1, 2, "R"), RuleSpan(4, 4, "R")],
    )
    assert [(s.text, s.heat, s.rules) for s in segments] == [("short", 0, ())]


def test_markup_in_the_body_is_kept_as_plain_text_for_the_template_to_escape():
    body = "<script>alert(1)</script>"
    assert build_segments(body)[0].text == body


def test_tiny_attributions_get_no_colour():
    assert heat_level(0.01, 1.0) == 0
    assert heat_level(0.06, 1.0) == 1
    assert heat_level(0.5, 0.0) == 0
