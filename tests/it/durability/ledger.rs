//! What was promised and what arrived: the board's versions in the order
//! the test made them, the deliveries the receiver accepted, and the
//! count of what was lost.
//!
//! **A change** is one transition of the board, from version `V(k-1)` to
//! `V(k)`, made by the k-th edit (the test waits until the watch has seen
//! each version before making the next edit, within a bound). A delivery
//! from `V(i)` to `V(j)` **covers** the transitions `i+1 ..= j`: a run that
//! missed a version (a node down during it) delivers the two changes as
//! one, and nothing is lost. A change is **lost** when no delivery the
//! receiver accepted (answered `200`) covers it once the faults have
//! stopped and the system has quiesced. **Two ids for one change**: a
//! change covered by accepted deliveries of more than one `webhook-id`
//! (a receiver deduplicating by id applies it twice). **Duplicates**: an
//! id accepted more than once (at least once delivery: allowed).

use super::node::JOB;
use super::receiver::Got;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The figures of one run of one scenario.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub changes: usize,
    /// Changes the watch was seen to record within the bound.
    pub seen: usize,
    /// Distinct ids accepted.
    pub delivered: usize,
    pub lost: usize,
    /// Accepted receptions of an id after its first.
    pub duplicates: usize,
    pub two_ids: usize,
    /// Requests whose signature did not verify.
    pub unverified: usize,
    /// Accepted deliveries naming versions the test never made, or going
    /// back.
    pub stray: usize,
    pub integrity_checked: usize,
    pub integrity_bad: usize,
    pub faults: usize,
    /// What went wrong, for the log.
    pub notes: Vec<String>,
}

impl Tally {
    /// Whether the goals hold: nothing lost, no change under two ids, no
    /// bad signature, the SQLite file intact.
    pub fn holds(&self) -> bool {
        self.lost == 0 && self.two_ids == 0 && self.unverified == 0 && self.integrity_bad == 0
    }

    /// The counts of the receiver's requests against `versions` (`V0` first).
    pub fn count(&mut self, versions: &[String], got: &[Got]) {
        self.changes = versions.len().saturating_sub(1);
        let index: BTreeMap<&str, usize> = versions
            .iter()
            .enumerate()
            .map(|(i, v)| (v.as_str(), i))
            .collect();
        self.unverified = got.iter().filter(|g| !g.verified).count();
        let accepted: Vec<&Got> = got
            .iter()
            .filter(|g| g.verified && g.status == 200 && g.job == JOB)
            .collect();
        let mut by_id: BTreeMap<&str, (usize, &Got)> = BTreeMap::new();
        for g in &accepted {
            by_id.entry(g.id.as_str()).or_insert((0, g)).0 += 1;
        }
        self.delivered = by_id.len();
        self.duplicates = by_id.values().map(|(n, _)| n - 1).sum();
        let mut covering: Vec<BTreeSet<&str>> = vec![BTreeSet::new(); versions.len()];
        for (id, (_, g)) in &by_id {
            match (index.get(g.from.as_str()), index.get(g.to.as_str())) {
                (Some(&i), Some(&j)) if i < j => {
                    for ids in &mut covering[i + 1..=j] {
                        ids.insert(*id);
                    }
                }
                _ => {
                    self.stray += 1;
                    self.notes
                        .push(format!("stray delivery {id}: {} -> {}", g.from, g.to));
                }
            }
        }
        for (k, ids) in covering.iter().enumerate().skip(1) {
            match ids.len() {
                0 => {
                    self.lost += 1;
                    self.notes.push(format!("change {k} lost"));
                }
                1 => {}
                _ => {
                    self.two_ids += 1;
                    let sent: Vec<String> = ids
                        .iter()
                        .map(|id| {
                            let g = by_id[id].1;
                            let (from, to) = (index[g.from.as_str()], index[g.to.as_str()]);
                            format!("{id} (V{from} -> V{to}, from node {})", g.node)
                        })
                        .collect();
                    self.notes.push(format!(
                        "change {k} under {} ids: {}",
                        ids.len(),
                        sent.join(", ")
                    ));
                }
            }
        }
    }

    /// `PRAGMA integrity_check` of the SQLite file at `path`, opened
    /// read-only (the node that writes it is down, or is another process).
    pub fn check_integrity(&mut self, path: &Path, when: &str) {
        use rusqlite::OpenFlags;
        self.integrity_checked += 1;
        let result = rusqlite::Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .and_then(|c| {
            let mut stmt = c.prepare("PRAGMA integrity_check")?;
            let rows: Vec<String> = stmt
                .query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            Ok(rows.join("; "))
        });
        match result {
            Ok(text) if text == "ok" => {}
            Ok(text) => {
                self.integrity_bad += 1;
                let text: String = text.chars().take(300).collect();
                self.notes.push(format!("integrity {when}: {text}"));
            }
            Err(e) => {
                self.integrity_bad += 1;
                self.notes.push(format!("integrity {when}: {e}"));
            }
        }
    }
}

/// The table: one line per run, then the scenario's totals.
pub fn table(rows: &[(String, Vec<(u64, Tally)>)]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<22} {:>4} {:>20} {:>7} {:>5} {:>9} {:>5} {:>5} {:>7} {:>7} {:>9} {:>6}",
        "scenario",
        "run",
        "seed",
        "changes",
        "seen",
        "delivered",
        "lost",
        "dups",
        "two-ids",
        "faults",
        "integrity",
        "result"
    );
    for (name, runs) in rows {
        let mut sum = Tally::default();
        let (mut lossy, mut double, mut bad) = (0, 0, 0);
        for (run, (seed, t)) in runs.iter().enumerate() {
            let _ = writeln!(
                out,
                "{:<22} {:>4} {:>20} {:>7} {:>5} {:>9} {:>5} {:>5} {:>7} {:>7} {:>9} {:>6}",
                name,
                run + 1,
                seed,
                t.changes,
                t.seen,
                t.delivered,
                t.lost,
                t.duplicates,
                t.two_ids,
                t.faults,
                integrity(t),
                if t.holds() { "ok" } else { "FAIL" }
            );
            sum.changes += t.changes;
            sum.seen += t.seen;
            sum.delivered += t.delivered;
            sum.lost += t.lost;
            sum.duplicates += t.duplicates;
            sum.two_ids += t.two_ids;
            sum.faults += t.faults;
            sum.integrity_checked += t.integrity_checked;
            sum.integrity_bad += t.integrity_bad;
            lossy += usize::from(t.lost > 0);
            double += usize::from(t.two_ids > 0);
            bad += usize::from(t.integrity_bad > 0);
        }
        let _ = writeln!(
            out,
            "{:<22} {:>4} {:>20} {:>7} {:>5} {:>9} {:>5} {:>5} {:>7} {:>7} {:>9} {:>6}",
            name,
            "all",
            "",
            sum.changes,
            sum.seen,
            sum.delivered,
            sum.lost,
            sum.duplicates,
            sum.two_ids,
            sum.faults,
            integrity(&sum),
            format!(
                "{}/{}",
                runs.iter().filter(|(_, t)| t.holds()).count(),
                runs.len()
            )
        );
        let _ = writeln!(
            out,
            "  -> {name}: changes lost in {lossy} of {} runs ({} of {}), a change under two ids in {double} runs, integrity_check bad in {bad} runs",
            runs.len(),
            sum.lost,
            sum.changes
        );
    }
    out
}

fn integrity(t: &Tally) -> String {
    if t.integrity_checked == 0 {
        "-".into()
    } else {
        format!("{}/{} bad", t.integrity_bad, t.integrity_checked)
    }
}
