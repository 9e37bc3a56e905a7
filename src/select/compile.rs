//! Compiles a set of selectors, once, into a deterministic automaton over the
//! selector model ([`crate::document::model`]); `apply` then walks a document
//! once, following one transition per object key.
//!
//! Each selector is a chain NFA: state `pos` means its first `pos` segments are
//! consumed, `**` loops on itself and may be skipped. A DFA state is a model
//! node plus the set of NFA states that are still *live* there, i.e. that can
//! still end on some path of the model below that node; dead states are pruned,
//! so a key whose subtree cannot produce a match is never visited. The DFA is
//! built eagerly over the model (it is small: the model's only cycle is
//! `children`), so applying it needs no locks and no allocation per key.

use super::parse::{ErrorKind, ParseError, Segment, Selector};
use crate::document::model::{self, Model, NodeId};
use std::collections::HashMap;

/// Safety net on the automaton's size. With the current model a list of 100
/// selectors of 20 segments stays far below it; a future model with more cycles
/// could approach it, and then the list is refused instead of using the memory.
pub const MAX_DFA_STATES: usize = 20_000;

/// What happens at one object key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// No selector can match at or below this key: not visited.
    Skip,
    /// A selector ends at this key, whose value sits at this model node.
    End(u32),
    /// Selectors pass through: continue in this DFA state.
    Descend(u32),
}

#[derive(Debug)]
struct DfaState {
    model: NodeId,
    /// One step per field of `model`, indexed like [`model::ModelNode::fields`].
    next: Box<[Step]>,
}

/// A compiled selector set.
#[derive(Debug)]
pub struct Program {
    states: Vec<DfaState>,
    /// `None` when the set is empty: nothing matches.
    start: Option<u32>,
}

impl Program {
    /// The state at the document root, or `None` when nothing can match.
    pub fn start(&self) -> Option<u32> {
        self.start
    }

    /// The step for `key` in `state`: [`Step::Skip`] for keys not in the model there.
    #[inline]
    pub fn step(&self, state: u32, key: &str) -> Step {
        let st = &self.states[state as usize];
        match model::get().node(st.model).field_index(key) {
            Some(i) => st.next[i],
            None => Step::Skip,
        }
    }

    /// Whether a field named one of `names` can reach the output: the
    /// program steps into one, or ends on a value whose part of the model
    /// holds one (a whole kept value keeps everything below it).
    pub fn visits_any(&self, names: &[&str]) -> bool {
        let model = model::get();
        self.states.iter().any(|state| {
            model
                .node(state.model)
                .fields()
                .zip(state.next.iter())
                .any(|((name, _), step)| match *step {
                    Step::Skip => false,
                    Step::Descend(_) => names.contains(&name),
                    Step::End(node) => {
                        names.contains(&name) || model_holds(model, node as NodeId, names)
                    }
                })
        })
    }

    /// The number of DFA states (for tests and benchmarks).
    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// True when nothing can match.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.start.is_none()
    }
}

/// Whether a field named one of `names` lies anywhere below `node`.
fn model_holds(model: &Model, node: NodeId, names: &[&str]) -> bool {
    let mut seen = vec![false; model.len()];
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if std::mem::replace(&mut seen[n], true) {
            continue;
        }
        for (name, child) in model.node(n).fields() {
            if names.contains(&name) {
                return true;
            }
            stack.push(child);
        }
    }
    false
}

/// One selector's chain NFA plus, for each position, the model nodes from which
/// the remaining segments can match a path.
struct Chain<'a> {
    segments: &'a [Segment],
    /// `live[pos * nodes + node]`.
    live: Vec<bool>,
    nodes: usize,
}

impl<'a> Chain<'a> {
    fn new(model: &Model, segments: &'a [Segment]) -> Chain<'a> {
        let nodes = model.len();
        let n = segments.len();
        let mut live = vec![false; (n + 1) * nodes];
        live[n * nodes..].fill(true);
        for pos in (0..n).rev() {
            let (here, next) = live.split_at_mut((pos + 1) * nodes);
            let here = &mut here[pos * nodes..];
            let next = &next[..nodes];
            match &segments[pos] {
                Segment::Name(name) => {
                    for (node, slot) in here.iter_mut().enumerate() {
                        *slot = model.node(node).child(name).is_some_and(|c| next[c]);
                    }
                }
                Segment::AnyOne => {
                    for (node, slot) in here.iter_mut().enumerate() {
                        *slot = model.node(node).fields().any(|(_, c)| next[c]);
                    }
                }
                Segment::AnyDepth => {
                    // Zero levels, or any path of fields leading to a live node:
                    // reverse reachability over the model's parent edges.
                    here.copy_from_slice(next);
                    let mut stack: Vec<NodeId> = (0..nodes).filter(|&c| here[c]).collect();
                    while let Some(c) = stack.pop() {
                        for &p in model.parents(c) {
                            if !here[p] {
                                here[p] = true;
                                stack.push(p);
                            }
                        }
                    }
                }
            }
        }
        Chain {
            segments,
            live,
            nodes,
        }
    }

    fn is_live(&self, pos: usize, node: NodeId) -> bool {
        self.live[pos * self.nodes + node]
    }

    fn end(&self) -> usize {
        self.segments.len()
    }
}

/// Compiles `selectors`, checking first that each can match the model.
///
/// # Errors
/// [`ErrorKind::NoMatch`] naming the first selector that matches no path of
/// the model; [`ErrorKind::TooComplex`] when the automaton would exceed
/// [`MAX_DFA_STATES`].
/// Whether `selector` can match some path of the model.
///
/// # Errors
/// `NoMatch` naming the selector.
pub fn validate(selector: &Selector) -> Result<(), ParseError> {
    let model = model::get();
    let matches = |segments: &[Segment]| Chain::new(model, segments).is_live(0, Model::ROOT);
    if matches(selector.segments()) {
        Ok(())
    } else {
        let suggestion = super::suggest::nearest(selector.segments(), matches);
        Err(ParseError::item(ErrorKind::NoMatch, selector.text()).suggesting(suggestion))
    }
}

pub fn compile(selectors: &[Selector]) -> Result<Program, ParseError> {
    let model = model::get();
    let chains: Vec<Chain<'_>> = selectors
        .iter()
        .map(|s| Chain::new(model, s.segments()))
        .collect();
    for (selector, chain) in selectors.iter().zip(&chains) {
        if !chain.is_live(0, Model::ROOT) {
            return Err(ParseError::item(ErrorKind::NoMatch, selector.text()));
        }
    }
    Builder::new(model, &chains).build()
}

/// An NFA state: (selector, position).
type Nfa = (u32, u32);

struct Builder<'m, 'c> {
    model: &'m Model,
    chains: &'c [Chain<'c>],
    ids: HashMap<(NodeId, Vec<Nfa>), u32>,
    states: Vec<DfaState>,
    pending: Vec<(u32, Vec<Nfa>)>,
}

impl<'m, 'c> Builder<'m, 'c> {
    fn new(model: &'m Model, chains: &'c [Chain<'c>]) -> Self {
        Builder {
            model,
            chains,
            ids: HashMap::new(),
            states: Vec::new(),
            pending: Vec::new(),
        }
    }

    fn build(mut self) -> Result<Program, ParseError> {
        let mut set = Vec::new();
        for sel in 0..self.chains.len() {
            self.close(&mut set, (sel as u32, 0));
        }
        let start = self
            .live_at(set, Model::ROOT)
            .map(|s| self.intern(Model::ROOT, s));
        while let Some((id, set)) = self.pending.pop() {
            let model = self.model;
            let node = model.node(self.states[id as usize].model);
            let mut next = Vec::with_capacity(node.len());
            for (name, child) in node.fields() {
                next.push(self.transition(&set, name, child));
                if self.states.len() > MAX_DFA_STATES {
                    return Err(ParseError::whole(ErrorKind::TooComplex));
                }
            }
            self.states[id as usize].next = next.into_boxed_slice();
        }
        Ok(Program {
            states: self.states,
            start,
        })
    }

    fn transition(&mut self, set: &[Nfa], name: &str, child: NodeId) -> Step {
        let mut out = Vec::new();
        for &(sel, pos) in set {
            let chain = &self.chains[sel as usize];
            let target = match &chain.segments[pos as usize] {
                Segment::Name(n) if **n == *name => pos + 1,
                Segment::Name(_) => continue,
                Segment::AnyOne => pos + 1,
                Segment::AnyDepth => pos,
            };
            self.close(&mut out, (sel, target));
        }
        let ends = out
            .iter()
            .any(|&(sel, pos)| pos as usize == self.chains[sel as usize].end());
        if ends {
            return Step::End(child as u32);
        }
        match self.live_at(out, child) {
            Some(live) => Step::Descend(self.intern(child, live)),
            None => Step::Skip,
        }
    }

    /// Adds `state` and, through `**` (which may match zero levels), the states after it.
    fn close(&self, set: &mut Vec<Nfa>, (sel, mut pos): Nfa) {
        let chain = &self.chains[sel as usize];
        loop {
            set.push((sel, pos));
            match chain.segments.get(pos as usize) {
                Some(Segment::AnyDepth) => pos += 1,
                _ => break,
            }
        }
    }

    /// Keeps the states that can still end below `node`; `None` when none can.
    fn live_at(&self, mut set: Vec<Nfa>, node: NodeId) -> Option<Vec<Nfa>> {
        set.retain(|&(sel, pos)| {
            let chain = &self.chains[sel as usize];
            (pos as usize) < chain.end() && chain.is_live(pos as usize, node)
        });
        set.sort_unstable();
        set.dedup();
        (!set.is_empty()).then_some(set)
    }

    fn intern(&mut self, node: NodeId, set: Vec<Nfa>) -> u32 {
        let key = (node, set);
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.states.len() as u32;
        self.states.push(DfaState {
            model: node,
            next: Box::new([]),
        });
        self.pending.push((id, key.1.clone()));
        self.ids.insert(key, id);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::parse::parse_list;

    fn valid(list: &str) -> Result<(), String> {
        let selectors = parse_list(list).map_err(|e| e.to_string())?;
        compile(&selectors).map(|_| ()).map_err(|e| e.to_string())
    }

    #[test]
    fn validation_against_the_model() {
        let cases: &[(&str, bool)] = &[
            ("version", true),
            ("source", true),
            ("source.provider", true),
            ("fetchedAt", true),
            ("board", true),
            ("board.id", true),
            ("board.*.id", true),
            ("board.**.id", true),
            ("board.children", true),
            ("board.children.id", true),
            ("board.children.caption", true),
            ("board.children.caption.plainText", true),
            ("board.caption", false),
            ("board.*.caption", true),
            ("board.**.caption", true),
            ("board.**.table.rows.value", true),
            ("board.children.table.rows.value", true),
            ("board.table.rows.value", false),
            ("board.**.rows.value", true),
            ("board.**.richText.plainText", true),
            ("**.timestamps", true),
            ("**.icon.svgUrl", true),
            ("**.file.url", true),
            ("**", true),
            ("*", true),
            ("*.*", true),
            ("**.**", true),
            ("**.*.**", true),
            ("board.**", true),
            ("board.**.password", false),
            ("**.password", false),
            ("**.token", false),
            ("**.userId", false),
            ("**.email", false),
            ("board.children.comments.userId", false),
            ("**.creator", false),
            ("**.blocks", true),
            ("**.blocks.type", false),
            ("**.blocks.**", true),
            ("**.blocks.*", false),
            ("**.content.text", false),
            ("board.**.content", true),
            ("**.colors", true),
            ("**.colors.hex", false),
            ("board.title.x", false),
            ("version.x", false),
            ("Version", false),
            ("board.Title", false),
            ("nope", false),
            ("board.children.children.children.children.id", true),
            ("*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*", true),
            ("board.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.id", true),
            ("source.*.*", false),
            ("source.**.x", false),
            ("fetchedAt.**", true),
            ("board.location.position.x", true),
            ("board.location.position.*.x", false),
        ];
        for (list, expected) in cases {
            let got = valid(list);
            assert_eq!(got.is_ok(), *expected, "{list}: {got:?}");
            if !expected {
                assert_eq!(got, Err(format!("Unknown field selector: {list}")));
            }
        }
    }

    #[test]
    fn first_unknown_item_is_reported() {
        assert_eq!(
            valid("version, board.caption ,board.nope"),
            Err("Unknown field selector: board.caption".to_owned())
        );
    }

    #[test]
    fn automaton_stays_small_for_hostile_lists() {
        // 100 distinct 20-segment selectors mixing `**`, `*` and `children`.
        let mut items = Vec::new();
        for i in 0..100usize {
            let segs: Vec<&str> = (0..18)
                .map(|j| match (i >> (j % 7)) & 3 {
                    0 => "**",
                    1 => "*",
                    _ => "children",
                })
                .collect();
            items.push(format!("board.{}.id", segs.join(".")));
        }
        // Built item by item: together they exceed the 8192-character list limit,
        // which only makes this harsher than anything a request can send.
        let selectors: Vec<Selector> = items
            .iter()
            .map(|i| crate::select::parse::parse_item(i).expect("parses"))
            .collect();
        let program = compile(&selectors).expect("all valid: `*` can be `children`");
        assert!(program.len() < 2_000, "{} states", program.len());
    }

    #[test]
    fn empty_set_matches_nothing() {
        let program = compile(&[]).expect("compiles");
        assert!(program.is_empty());
    }
}
