//! Field selection: preset views, `include` and `exclude`
//! selector lists, applied to a sanitized BoardDocument. The gateway parses the
//! query into a [`Selection`] (request step 6) and applies it to every response.
//!
//! - [`parse`]: the grammar, its limits and error kinds;
//! - [`compile`]: selectors to an automaton over the selector model;
//! - [`apply`]: the include and exclude walks over a value tree (the reference);
//! - [`stream`]: the same walks over compact JSON bytes (the serving path).
//!
//! ```
//! use shared_board_api::internals::select::{Selection, View};
//! use serde_json::json;
//!
//! let doc = json!({"version": 1, "board": {"id": "b", "title": "T", "children": []}});
//! let sel = Selection::include("board.title, version").unwrap();
//! assert_eq!(sel.apply(&doc), json!({"version": 1, "board": {"title": "T"}}));
//! assert_eq!(sel.canonical(), "include=board.title,version");
//! let err = Selection::exclude(View::Full, "board.caption").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "Unknown field selector: exclude item 1: matches no field of the board document"
//! );
//! ```

#[cfg(any(test, feature = "internals"))]
pub mod apply;
pub mod compile;
pub mod parse;
pub mod stream;
mod suggest;

use crate::document::{Coverage, BODY_FIELDS};
use compile::Program;
#[cfg(any(test, feature = "internals"))]
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex};

/// The `compact` preset: ids, types and titles of the whole tree.
pub const COMPACT: &str =
    "version,source.provider,source.boardId,board.**.id,board.**.type,board.**.title";
/// The `standard` preset: the root fields and its complete children.
pub const STANDARD: &str =
    "version,source,fetchedAt,board.id,board.type,board.title,board.color,board.children";

/// A preset view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum View {
    /// Ids, types and titles: the default of `/api/search`.
    Compact,
    /// Source, fetch time, the root's headline fields and all children.
    Standard,
    /// The whole sanitized document: the default of `/api/detail`.
    Full,
}

impl View {
    /// `compact`, `standard` or `full` (case-sensitive); anything else is `None`.
    pub fn parse(name: &str) -> Option<View> {
        match name {
            "compact" => Some(View::Compact),
            "standard" => Some(View::Standard),
            "full" => Some(View::Full),
            _ => None,
        }
    }

    /// The name as written in the query.
    pub fn as_str(self) -> &'static str {
        match self {
            View::Compact => "compact",
            View::Standard => "standard",
            View::Full => "full",
        }
    }

    /// The preset's include program; `None` for `full`.
    fn program(self) -> Option<Arc<Program>> {
        match self {
            View::Compact => Some(Arc::clone(&COMPACT_PROGRAM)),
            View::Standard => Some(Arc::clone(&STANDARD_PROGRAM)),
            View::Full => None,
        }
    }
}

/// The query parameter a [`SelectorError`] is about (`error.field`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Param {
    Include,
    Exclude,
}

impl Param {
    /// `include` or `exclude`.
    pub fn as_str(self) -> &'static str {
        match self {
            Param::Include => "include",
            Param::Exclude => "exclude",
        }
    }
}

/// A rejected selector list: answered as `400 INVALID_FIELD_SELECTOR` with
/// `error.field = param.as_str()` and `error.message = message`.
///
/// `message` is `Unknown field selector: <param> item <n>: <reason>` (the
/// item's place in the list, from 1, never its text: a permission id pasted
/// into `include` must not come back) for an empty item, a bad segment,
/// more than 20 segments or a selector matching no field; otherwise it
/// names the limit exceeded (100 items, 8192 characters).
/// See [`parse::ErrorKind`] for the full list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorError {
    pub param: Param,
    /// `Unknown field selector: <param> item <n>: <reason>` for a bad item, or a
    /// message naming the limit a parameter passed.
    pub message: String,
    /// The nearest valid selector, when one is a name away.
    pub hint: Option<String>,
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SelectorError {}

static COMPACT_PROGRAM: LazyLock<Arc<Program>> = LazyLock::new(|| preset(COMPACT));
static STANDARD_PROGRAM: LazyLock<Arc<Program>> = LazyLock::new(|| preset(STANDARD));

/// Compiles a preset; the lists are constants checked by `tests::presets_compile`.
fn preset(list: &str) -> Arc<Program> {
    match compile_list(list) {
        Ok((program, _)) => Arc::new(program),
        Err(e) => panic!("preset {list:?} does not compile: {e}"),
    }
}

/// Parses, validates (item by item, so the first bad item is reported) and
/// compiles one list; also returns its sorted, de-duplicated text.
fn compile_list(list: &str) -> Result<(Program, String), parse::ParseError> {
    let selectors = parse::parse_list_checked(list, compile::validate)?;
    let program = compile::compile(&selectors)?;
    let mut texts: Vec<&str> = selectors.iter().map(|s| s.text()).collect();
    texts.sort_unstable();
    Ok((program, texts.join(",")))
}

#[derive(Debug, Clone)]
enum Plan {
    Full,
    Include(Arc<Program>),
    /// The base view (`None` = full), then the removal.
    Exclude(Option<Arc<Program>>, Arc<Program>),
}

/// A compiled selection: cheap to apply many times, shareable across threads.
#[derive(Debug, Clone)]
pub struct Selection {
    plan: Plan,
    /// Shared: cache keys hold it on every cached read.
    canonical: Arc<str>,
    coverage: Coverage,
}

impl Plan {
    /// See [`Selection::coverage`]: whether anything the plan outputs can
    /// lie under a body field.
    fn coverage(&self) -> Coverage {
        let needs_bodies = match self {
            Plan::Full | Plan::Exclude(None, _) => true,
            Plan::Include(program) | Plan::Exclude(Some(program), _) => {
                program.visits_any(&BODY_FIELDS)
            }
        };
        if needs_bodies {
            Coverage::Full
        } else {
            Coverage::Outline
        }
    }
}

impl Selection {
    /// A preset view. Presets are compiled once per process.
    pub fn view(view: View) -> Selection {
        let plan = match view.program() {
            Some(program) => Plan::Include(program),
            None => Plan::Full,
        };
        Selection {
            coverage: plan.coverage(),
            plan,
            canonical: format!("view={}", view.as_str()).into(),
        }
    }

    /// `include` alone: start from nothing and keep the listed fields.
    ///
    /// # Errors
    /// A [`SelectorError`] with `param: Param::Include`.
    pub fn include(list: &str) -> Result<Selection, SelectorError> {
        compiled(None, list, || {
            let (program, text) = compile_list(list).map_err(|e| error(Param::Include, &e))?;
            let plan = Plan::Include(Arc::new(program));
            Ok(Selection {
                coverage: plan.coverage(),
                plan,
                canonical: format!("include={text}").into(),
            })
        })
    }

    /// `base` (the endpoint default or an explicit `view`), then remove the listed fields.
    ///
    /// # Errors
    /// A [`SelectorError`] with `param: Param::Exclude`.
    pub fn exclude(base: View, list: &str) -> Result<Selection, SelectorError> {
        compiled(Some(base), list, || {
            let (program, text) = compile_list(list).map_err(|e| error(Param::Exclude, &e))?;
            let plan = Plan::Exclude(base.program(), Arc::new(program));
            Ok(Selection {
                coverage: plan.coverage(),
                plan,
                canonical: format!("view={}&exclude={text}", base.as_str()).into(),
            })
        })
    }

    /// The least a document must hold for this selection: an
    /// [`Coverage::Outline`] when the selection cannot output any element
    /// body (it renders the same bytes from either), else the full document.
    pub fn coverage(&self) -> Coverage {
        self.coverage
    }

    /// Applies the selection to a sanitized full document; `doc` is not changed.
    #[cfg(any(test, feature = "internals"))]
    pub fn apply(&self, doc: &Value) -> Value {
        match &self.plan {
            Plan::Full => doc.clone(),
            Plan::Include(program) => apply::include(program, doc),
            Plan::Exclude(base, program) => {
                // A bulk clone then deleting in place measured faster than
                // copying key by key (95 vs 146 ms on the 20k-node bench).
                let mut out = match base {
                    Some(base) => apply::include(base, doc),
                    None => doc.clone(),
                };
                apply::exclude(program, &mut out);
                out
            }
        }
    }

    /// Applies the selection to the compact JSON bytes of a sanitized full
    /// document, appending the selected document to `out`; the same bytes
    /// as serializing [`Selection::apply`]'s value.
    ///
    /// # Errors
    /// [`stream::Malformed`] when `doc` is not compact JSON.
    pub fn apply_bytes(&self, doc: &[u8], out: &mut Vec<u8>) -> Result<(), stream::Malformed> {
        match &self.plan {
            Plan::Full => {
                out.extend_from_slice(doc);
                Ok(())
            }
            Plan::Include(program) => stream::include(program, doc, out),
            Plan::Exclude(None, program) => stream::exclude(program, doc, out),
            Plan::Exclude(Some(base), program) => {
                let mut viewed = Vec::with_capacity(doc.len() / 2);
                stream::include(base, doc, &mut viewed)?;
                stream::exclude(program, &viewed, out)
            }
        }
    }

    /// [`Selection::apply_bytes`] into any [`stream::Sink`], for a reader
    /// that builds something other than bytes from the selected document
    /// (the Markdown render). `scratch` holds the intermediate bytes of an
    /// `exclude` over a view, which the sink may borrow from.
    ///
    /// # Errors
    /// [`stream::Malformed`] when `doc` is not compact JSON.
    pub fn apply_into<'a>(
        &self,
        doc: &'a [u8],
        scratch: &'a mut Vec<u8>,
        out: &mut impl stream::Sink<'a>,
    ) -> Result<(), stream::Malformed> {
        match &self.plan {
            Plan::Full => {
                let end = out.value(doc, 0)?;
                if end == doc.len() {
                    Ok(())
                } else {
                    Err(stream::Malformed)
                }
            }
            Plan::Include(program) => stream::include(program, doc, out),
            Plan::Exclude(None, program) => stream::exclude(program, doc, out),
            Plan::Exclude(Some(base), program) => {
                stream::include(base, doc, scratch)?;
                let viewed: &'a Vec<u8> = scratch;
                stream::exclude(program, viewed, out)
            }
        }
    }

    /// True for the `full` view: the document as it is.
    pub fn is_full(&self) -> bool {
        matches!(self.plan, Plan::Full)
    }

    /// The selection as text, for the ETag: the view and the de-duplicated
    /// selectors sorted, so the same set in any order gives the same string,
    /// e.g. `view=compact`, `include=board.id,version`,
    /// `view=full&exclude=**.timestamps`.
    pub fn canonical(&self) -> String {
        self.canonical.to_string()
    }

    /// [`Selection::canonical`], shared rather than copied (for cache keys).
    pub fn canonical_shared(&self) -> Arc<str> {
        Arc::clone(&self.canonical)
    }
}

/// Most compiled lists kept; popular lists repeat, so a small map serves
/// them, and a full map is emptied at once rather than tracking recency.
const COMPILED_CAP: usize = 64;

type CompiledKey = (Option<View>, String);

static COMPILED: LazyLock<Mutex<HashMap<CompiledKey, Selection>>> =
    LazyLock::new(|| Mutex::new(HashMap::with_capacity(COMPILED_CAP)));

/// The selection for the raw `list` (an include when `base` is `None`, an
/// exclude on `base` otherwise), compiled once by `compile` and then reused:
/// compiling a 10-item list costs tens of microseconds per request. Lists
/// longer than the parameter limit and rejected lists are not kept.
fn compiled(
    base: Option<View>,
    list: &str,
    compile: impl FnOnce() -> Result<Selection, SelectorError>,
) -> Result<Selection, SelectorError> {
    let lock = || COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    // The lookup borrows `list`; only a miss allocates the key.
    if let Some(found) = lock()
        .iter()
        .find(|((b, l), _)| *b == base && l == list)
        .map(|(_, s)| s.clone())
    {
        return Ok(found);
    }
    let selection = compile()?;
    if list.len() <= parse::MAX_CHARS {
        let mut map = lock();
        if map.len() >= COMPILED_CAP {
            map.clear();
        }
        map.insert((base, list.to_owned()), selection.clone());
    }
    Ok(selection)
}

fn error(param: Param, e: &parse::ParseError) -> SelectorError {
    SelectorError {
        param,
        message: e.client_message(param.as_str()),
        // A valid selector of the model's names: no client text.
        hint: e.suggestion().map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiled_lists_are_reused_by_their_text_and_kind() {
        let program = |s: &Selection| match &s.plan {
            Plan::Include(p) | Plan::Exclude(_, p) => Arc::clone(p),
            Plan::Full => panic!("not a list"),
        };
        let list = "board.title, version,board.children.id";
        let a = Selection::include(list).expect("valid");
        let b = Selection::include(list).expect("valid");
        assert!(Arc::ptr_eq(&program(&a), &program(&b)));
        let c = Selection::exclude(View::Full, list).expect("valid");
        assert!(!Arc::ptr_eq(&program(&a), &program(&c)));
        assert_eq!(
            c.canonical(),
            "view=full&exclude=board.children.id,board.title,version"
        );
        let d = Selection::exclude(View::Compact, list).expect("valid");
        assert!(d.canonical().starts_with("view=compact&"));
        // A rejected list stays rejected.
        for _ in 0..2 {
            assert!(Selection::include("board.caption").is_err());
        }
    }

    #[test]
    fn the_first_bad_item_is_reported_whatever_is_wrong_with_it() {
        // The item is named by its place, never by its text.
        let cases = [
            ("nope,1x", 1, "matches no field of the board document"),
            (
                "1x,nope",
                1,
                "a segment is not *, ** or a name (a letter, then letters, digits or _)",
            ),
            (
                "board.caption,a,,b",
                1,
                "matches no field of the board document",
            ),
            ("version,,board.caption", 2, "empty selector"),
            (
                "version,board.**.password,board..id",
                2,
                "matches no field of the board document",
            ),
        ];
        for (list, n, reason) in cases {
            for (param, err) in [
                ("include", Selection::include(list).err()),
                ("exclude", Selection::exclude(View::Full, list).err()),
            ] {
                let err = err.expect(list);
                assert_eq!(
                    err.message,
                    format!("Unknown field selector: {param} item {n}: {reason}"),
                    "{list}"
                );
            }
        }
    }

    #[test]
    fn a_selector_near_a_valid_one_names_it() {
        let cases: &[(&str, Option<&str>)] = &[
            ("board.children.titel", Some("board.children.title")),
            ("board.chilren.title", Some("board.children.title")),
            ("board.Title", Some("board.title")),
            (
                "board.**.richtext.plainText",
                Some("board.**.richText.plainText"),
            ),
            ("**.timestamp", Some("**.timestamps")),
            ("fetchedat", Some("fetchedAt")),
            // Two names wrong, or nothing near: no suggestion.
            ("board.chilren.titel", None),
            ("nope", None),
            ("board.caption", None),
            // Sensitive fields are not in the model, so never suggested.
            ("board.**.password", None),
            ("**.Token", None),
            // A leaf has no fields to suggest.
            ("board.children.drawing.svg", None),
        ];
        for (bad, nearest) in cases {
            let err = Selection::include(bad).expect_err(bad);
            assert_eq!(
                err.message,
                "Unknown field selector: include item 1: matches no field of the board document"
            );
            assert_eq!(err.hint.as_deref(), *nearest, "{bad}");
            if let Some(s) = nearest {
                assert!(Selection::include(s).is_ok(), "{s} is valid");
            }
        }
    }

    #[test]
    fn presets_compile() {
        assert!(compile_list(COMPACT).is_ok());
        assert!(compile_list(STANDARD).is_ok());
    }

    #[test]
    fn view_names() {
        let cases: &[(&str, Option<View>)] = &[
            ("compact", Some(View::Compact)),
            ("standard", Some(View::Standard)),
            ("full", Some(View::Full)),
            ("Full", None),
            ("", None),
            (" full", None),
            ("minimal", None),
        ];
        for (name, expected) in cases {
            assert_eq!(View::parse(name), *expected, "{name}");
            if let Some(view) = expected {
                assert_eq!(view.as_str(), *name);
            }
        }
    }

    #[test]
    fn canonical_texts() {
        let inc = |l: &str| Selection::include(l).map(|s| s.canonical());
        let exc = |v: View, l: &str| Selection::exclude(v, l).map(|s| s.canonical());
        let cases: &[(Result<String, SelectorError>, &str)] = &[
            (
                Ok(Selection::view(View::Compact).canonical()),
                "view=compact",
            ),
            (
                Ok(Selection::view(View::Standard).canonical()),
                "view=standard",
            ),
            (Ok(Selection::view(View::Full).canonical()), "view=full"),
            (inc("version"), "include=version"),
            (inc("version,board.id"), "include=board.id,version"),
            (
                inc(" board.id , version,board.id"),
                "include=board.id,version",
            ),
            (
                exc(View::Full, "**.timestamps"),
                "view=full&exclude=**.timestamps",
            ),
            (
                exc(View::Compact, "board.**.title"),
                "view=compact&exclude=board.**.title",
            ),
            (
                exc(View::Compact, "version,board"),
                "view=compact&exclude=board,version",
            ),
        ];
        for (got, expected) in cases {
            assert_eq!(got.as_deref(), Ok(*expected));
        }
    }

    #[test]
    fn errors_name_their_parameter() {
        let cases: &[(Result<Selection, SelectorError>, Param, &str)] = &[
            (
                Selection::include("board.caption"),
                Param::Include,
                "Unknown field selector: include item 1: matches no field of the board document",
            ),
            (
                Selection::include("version,,b"),
                Param::Include,
                "Unknown field selector: include item 2: empty selector",
            ),
            (
                Selection::exclude(View::Full, " bad-name "),
                Param::Exclude,
                "Unknown field selector: exclude item 1: a segment is not *, ** or a name \
                 (a letter, then letters, digits or _)",
            ),
            (
                Selection::exclude(View::Compact, "version,**.password"),
                Param::Exclude,
                "Unknown field selector: exclude item 2: matches no field of the board document",
            ),
            (
                Selection::include("**.Token"),
                Param::Include,
                "Unknown field selector: include item 1: matches no field of the board document",
            ),
        ];
        for (got, param, message) in cases {
            let err = got.as_ref().expect_err(message);
            assert_eq!(err.param, *param);
            assert_eq!(err.message, *message);
            assert_eq!(err.to_string(), *message);
        }
        assert_eq!(Param::Include.as_str(), "include");
        assert_eq!(Param::Exclude.as_str(), "exclude");
    }

    #[test]
    fn selection_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Selection>();
        check::<SelectorError>();
    }
}
