//! A goal's acceptance criteria as stored (`criteria: [{id, text, source, state, evidence?,
//! since?}]`): the type, the stored shape, and the rule for a list the user gives. Grading and
//! derivation live in `goal/decide/grading.rs`. Pure.

use serde_json::{json, Map, Value};

use crate::text::truncate_chars;

/// At most this many criteria per goal.
pub const MAX_CRITERIA: usize = 8;
/// At most this many characters per criterion.
pub const CRITERION_CHAR_LIMIT: usize = 300;
/// At most this many evidence ids kept per criterion.
const MAX_CITED: usize = 8;

crate::wire::wire_enum! {
    /// Who wrote a criterion.
    pub enum CriterionSource {
        #[doc = "The user set it."] User = "user",
        #[doc = "The auditor derived it from the objective."] Derived = "derived",
    }
}

crate::wire::wire_enum! {
    /// Where a criterion stands after the latest audit (read in any case).
    pub enum CriterionState {
        #[doc = "Not graded yet."] Unmet = "unmet",
        #[doc = "Graded met, citing evidence that existed in that audit's digest."] Met = "met",
        #[doc = "Graded without proof (no grade, no cited id, or an unknown one)."] Unclear = "unclear",
    }
}

/// One acceptance criterion.
#[derive(Debug, Clone, PartialEq)]
pub struct Criterion {
    /// `c<n>`: assigned in order, never reused within a goal.
    pub id: String,
    /// What must hold (one line, at most [`CRITERION_CHAR_LIMIT`] characters).
    pub text: String,
    /// Who wrote it.
    pub source: CriterionSource,
    /// The latest grade.
    pub state: CriterionState,
    /// The evidence ids (`e<n>` of the grading audit's digest) the latest grade cited.
    pub evidence: Vec<String>,
    /// When the state last changed (ms since epoch).
    pub since: Option<f64>,
    /// The stored text when it is longer than [`CRITERION_CHAR_LIMIT`] (written by hand): `text`
    /// holds it cut to the limit, which is what grading reads, as data; this is written back, so
    /// the user's words are kept whole.
    pub stored_text: Option<String>,
}

impl Criterion {
    /// A fresh, ungraded criterion.
    pub fn new(number: u64, text: String, source: CriterionSource) -> Criterion {
        Criterion {
            id: format!("c{number}"),
            text,
            source,
            state: CriterionState::Unmet,
            evidence: Vec::new(),
            since: None,
            stored_text: None,
        }
    }

    /// The id's number (`c3` → 3).
    pub fn number(&self) -> Option<u64> {
        self.id.strip_prefix('c')?.parse().ok()
    }

    /// The stored shape.
    pub fn to_value(&self) -> Value {
        let mut object = Map::new();
        object.insert("id".into(), json!(self.id));
        object.insert("text".into(), json!(self.stored_text.as_deref().unwrap_or(&self.text)));
        object.insert("source".into(), json!(self.source.as_str()));
        object.insert("state".into(), json!(self.state.as_str()));
        if !self.evidence.is_empty() {
            object.insert("evidence".into(), json!(self.evidence));
        }
        if let Some(since) = self.since {
            object.insert("since".into(), json!(since));
        }
        Value::Object(object)
    }

    fn from_value(value: &Value) -> Option<Criterion> {
        let id = value.get("id")?.as_str()?.to_string();
        let stored = value.get("text")?.as_str()?;
        // Over the limit (written by hand): read cut to the limit, kept whole (see `stored_text`).
        let text = truncate_chars(stored, CRITERION_CHAR_LIMIT);
        let stored_text = (text.len() != stored.len()).then(|| stored.to_string());
        let source = CriterionSource::parse(value.get("source")?.as_str()?)?;
        let state = CriterionState::parse_any_case(value.get("state")?.as_str()?)?;
        let evidence = match value.get("evidence") {
            None => Vec::new(),
            Some(list) => list.as_array()?.iter().map(|e| e.as_str().map(str::to_string)).collect::<Option<_>>()?,
        };
        let since = value.get("since").and_then(Value::as_f64).filter(|n| n.is_finite());
        let criterion = Criterion { id, text, source, state, evidence, since, stored_text };
        (criterion.number().is_some() && criterion.evidence.len() <= MAX_CITED).then_some(criterion)
    }
}

/// A criterion's grade as the trail records it after an audit: the criterion without its text.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedGrade {
    /// The criterion's id.
    pub id: String,
    /// Who wrote the criterion.
    pub source: CriterionSource,
    /// The grade.
    pub state: CriterionState,
    /// The evidence ids the grade cited.
    pub evidence: Vec<String>,
}

impl RecordedGrade {
    /// The grade `criterion` holds now.
    pub fn of(criterion: &Criterion) -> RecordedGrade {
        RecordedGrade {
            id: criterion.id.clone(),
            source: criterion.source,
            state: criterion.state,
            evidence: criterion.evidence.clone(),
        }
    }

    /// The trail's shape, `{id, state, evidence, source}`.
    pub fn to_value(&self) -> Value {
        json!({"id": self.id, "state": self.state.as_str(), "evidence": self.evidence, "source": self.source.as_str()})
    }

    /// Reads the trail's shape; a part missing from a hand-edited line makes it no grade, except
    /// the cited ids (none).
    pub fn from_value(value: &Value) -> Option<RecordedGrade> {
        let evidence = value
            .get("evidence")
            .and_then(Value::as_array)
            .map_or_else(Vec::new, |list| list.iter().filter_map(Value::as_str).map(str::to_string).collect());
        Some(RecordedGrade {
            id: value.get("id")?.as_str()?.to_string(),
            source: CriterionSource::parse(value.get("source")?.as_str()?)?,
            state: CriterionState::parse_any_case(value.get("state")?.as_str()?)?,
            evidence,
        })
    }
}

/// Reads a stored list; `None` (kept verbatim by the field table) when any item is unreadable,
/// an id repeats, or there are more than [`MAX_CRITERIA`].
pub fn parse_stored_criteria(value: &Value) -> Option<Vec<Criterion>> {
    let items = value.as_array()?;
    if items.len() > MAX_CRITERIA {
        return None;
    }
    let list: Vec<Criterion> = items.iter().map(Criterion::from_value).collect::<Option<_>>()?;
    let mut ids: Vec<&str> = list.iter().map(|c| c.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    (ids.len() == list.len()).then_some(list)
}

/// Why a list of criteria was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriteriaError(pub String);

impl std::fmt::Display for CriteriaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CriteriaError {}

/// One line of text: control characters removed, white space collapsed, trimmed.
pub fn one_line(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c.is_control()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Reads criteria the user gives: an array of at most [`MAX_CRITERIA`] strings (or `{text}`
/// objects), each non-empty and at most [`CRITERION_CHAR_LIMIT`] characters once made one line.
pub fn parse_user_criteria(value: &Value) -> Result<Vec<String>, CriteriaError> {
    let items = value.as_array().ok_or_else(|| CriteriaError("criteria must be an array of strings".into()))?;
    if items.len() > MAX_CRITERIA {
        return Err(CriteriaError(format!("at most {MAX_CRITERIA} criteria")));
    }
    let mut texts = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let refuse = |why: &str| CriteriaError(format!("criterion {}: {why}", index + 1));
        let raw = item.as_str().or_else(|| item.get("text").and_then(Value::as_str));
        let text = one_line(raw.ok_or_else(|| refuse("must be a string"))?);
        if text.is_empty() {
            return Err(refuse("is empty"));
        }
        if text.chars().count() > CRITERION_CHAR_LIMIT {
            return Err(refuse(&format!("is longer than {CRITERION_CHAR_LIMIT} characters")));
        }
        texts.push(text);
    }
    Ok(texts)
}

/// Turns texts into criteria with fresh ids after the highest one `issued` so far. A text equal
/// to one of `keep` keeps that criterion (id, grade) as it is. Returns the list and the new
/// highest id number.
pub fn assign_criteria(
    texts: &[String],
    source: CriterionSource,
    keep: &[Criterion],
    issued: u64,
) -> (Vec<Criterion>, u64) {
    let mut next = issued.max(keep.iter().filter_map(Criterion::number).max().unwrap_or(0));
    let list = texts
        .iter()
        .take(MAX_CRITERIA)
        .map(|text| match keep.iter().find(|c| &c.text == text) {
            Some(kept) => kept.clone(),
            None => {
                next += 1;
                Criterion::new(next, truncate_chars(text, CRITERION_CHAR_LIMIT), source)
            }
        })
        .collect();
    (list, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_criteria_are_one_line_and_bounded() {
        let texts = parse_user_criteria(&json!(["  docs\n updated ", {"text": "tests\tpass"}])).unwrap();
        assert_eq!(texts, ["docs updated", "tests pass"]);
        assert!(parse_user_criteria(&json!(["x".repeat(CRITERION_CHAR_LIMIT + 1)])).is_err());
        assert!(parse_user_criteria(&json!([" \u{7} "])).is_err());
        assert!(parse_user_criteria(&json!(vec!["a"; MAX_CRITERIA + 1])).is_err());
        assert!(parse_user_criteria(&json!("a")).is_err());
        assert_eq!(parse_user_criteria(&json!([1])).unwrap_err().to_string(), "criterion 1: must be a string");
    }

    #[test]
    fn ids_are_never_reused_and_kept_texts_keep_their_grade() {
        let (first, issued) = assign_criteria(&["a".into(), "b".into()], CriterionSource::User, &[], 0);
        assert_eq!(first.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["c1", "c2"]);
        let mut graded = first.clone();
        graded[1].state = CriterionState::Met;
        let (second, issued) = assign_criteria(&["b".into(), "c".into()], CriterionSource::User, &graded, issued);
        assert_eq!(second[0], graded[1], "an unchanged text keeps its id and grade");
        assert_eq!(second[1].id, "c3", "a new text takes the next id, never c1 again");
        assert_eq!(issued, 3);
    }

    #[test]
    fn stored_lists_round_trip_or_are_refused() {
        let (list, _) = assign_criteria(&["a".into()], CriterionSource::Derived, &[], 0);
        let value = Value::Array(list.iter().map(Criterion::to_value).collect());
        assert_eq!(parse_stored_criteria(&value).unwrap(), list);
        assert!(parse_stored_criteria(&json!([{"id": "c1", "text": "a", "source": "x", "state": "met"}])).is_none());
        let twice = json!([{"id": "c1", "text": "a", "source": "user", "state": "met"},
            {"id": "c1", "text": "b", "source": "user", "state": "unmet"}]);
        assert!(parse_stored_criteria(&twice).is_none());
    }

    #[test]
    fn an_over_long_stored_criterion_reads_cut_and_is_written_back_whole() {
        let long = format!("{}é tail", "x".repeat(CRITERION_CHAR_LIMIT));
        let stored = json!([{"id": "c1", "text": long, "source": "user", "state": "unmet"}]);
        let mut list = parse_stored_criteria(&stored).expect("an over-long text is read, cut");
        assert_eq!(list[0].text.chars().count(), CRITERION_CHAR_LIMIT);
        assert_eq!(list[0].to_value(), stored[0], "written back unchanged");
        // A grade changes the state, never the words.
        list[0].state = CriterionState::Met;
        assert_eq!(list[0].to_value()["text"], json!(long));
        // Within the limit nothing extra is kept.
        let short = parse_stored_criteria(&json!([{"id": "c1", "text": "ok", "source": "user", "state": "met"}]));
        assert_eq!(short.unwrap()[0].stored_text, None);
        // A criterion without text is still unreadable.
        assert!(parse_stored_criteria(&json!([{"id": "c1", "source": "user", "state": "met"}])).is_none());
    }

    #[test]
    fn a_recorded_grade_reads_back_as_the_same_grade() {
        let (mut list, _) = assign_criteria(&["tests pass".into()], CriterionSource::Derived, &[], 0);
        list[0].state = CriterionState::Met;
        list[0].evidence = vec!["e2".into()];
        let grade = RecordedGrade::of(&list[0]);
        assert_eq!(grade.to_value(), json!({"id": "c1", "state": "met", "evidence": ["e2"], "source": "derived"}));
        assert_eq!(RecordedGrade::from_value(&grade.to_value()), Some(grade));
        assert_eq!(RecordedGrade::from_value(&json!({"id": "c1", "state": "met"})), None, "no source");
    }
}
