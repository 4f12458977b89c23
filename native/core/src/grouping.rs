//! The sequential half of grouping: which units become references, and which reference each
//! covered unit joins (`simscan.similarity.grouping.group_rows` prepares the units, their visit
//! order and their edges with array operations, and builds the groups' columns from what this
//! returns).  The rules are the module docstring of `simscan.similarity.grouping`; the tests of
//! `tests/test_grouping*.py` hold this against a plain object-based implementation of them.
//!
//! Units are numbered below `n` (a unit is its smallest file-table row).  The *walk* lists the units
//! with edges in visit order: the visit position of each, and the range of its edges.  An edge runs
//! from its walk unit to a partner unit with the pair's best score and the pair's index (the pair
//! order of `find_pairs`: a lower index wins a tie).  Scores compare as Python floats do.

use std::cmp::Ordering;

/// The units to group, in visit order, and their edges.
pub struct Walk<'a> {
    /// Visit position of each walk unit (ascending).
    pub pos: &'a [i64],
    /// The unit.
    pub unit: &'a [i64],
    /// Its edges: `start[i]..end[i]` of the edge columns.
    pub start: &'a [i64],
    pub end: &'a [i64],
    /// Edge columns: partner unit, best score (percent), pair index.
    pub dst: &'a [i32],
    pub score: &'a [f64],
    pub pair: &'a [i64],
}

/// Per unit (indexed by unit): its files (a unit of several files holds copies), and whether it
/// holds a file under a reference folder (its members never move away).
pub struct Units<'a> {
    pub count: &'a [i64],
    pub marked: &'a [u8],
}

/// The groups as blocks: a group per `group_pos` (its reference's visit position), then per block
/// (a unit in a group, the reference first) its group's position, its sequence in the group (0 the
/// reference, then best score first), its unit and the pair joining it to the reference (-1 for the
/// reference).  Groups appear in visit order of their references.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Placed {
    pub group_pos: Vec<i64>,
    pub block_pos: Vec<i64>,
    pub block_seq: Vec<i64>,
    pub block_unit: Vec<i64>,
    pub block_pair: Vec<i64>,
}

/// A member of a reference: (-score, its visit position, its unit, the pair), ordered as that tuple.
#[derive(Debug, Clone, Copy)]
struct Entry {
    neg: f64,
    pos: i64,
    unit: i64,
    pair: i64,
}

fn float_cmp(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

/// The order of a partner choice: (-score, partner's visit position, pair index).
fn key_cmp(a: (f64, i64, i64), b: (f64, i64, i64)) -> Ordering {
    float_cmp(a.0, b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2))
}

fn entry_cmp(a: &Entry, b: &Entry) -> Ordering {
    float_cmp(a.neg, b.neg)
        .then(a.pos.cmp(&b.pos))
        .then(a.unit.cmp(&b.unit))
        .then(a.pair.cmp(&b.pair))
}

const NONE: u32 = u32::MAX;

struct State<'a> {
    walk: &'a Walk<'a>,
    units: &'a Units<'a>,
    move_keeps: f64,
    assigned: Vec<bool>,
    is_ref: Vec<bool>,
    /// A covered unit's best score with a reference so far.
    near_ref: Vec<f64>,
    /// A member's reference (-1: none).
    chosen: Vec<i64>,
    /// A member's score with its reference.
    score_of: Vec<f64>,
    /// Walk index of each unit (`NONE`: not in the walk).
    widx: Vec<u32>,
    /// Members of each unit that has a member list (`slot` into `members`).
    slot: Vec<u32>,
    members: Vec<Vec<Entry>>,
    /// (visit position, unit) of the references, in the order they were made.
    refs: Vec<(i64, i64)>,
}

impl<'a> State<'a> {
    fn edges(&self, u: i64) -> std::ops::Range<usize> {
        let i = self.widx[u as usize] as usize;
        self.walk.start[i] as usize..self.walk.end[i] as usize
    }

    fn pos_of(&self, u: i64) -> i64 {
        self.walk.pos[self.widx[u as usize] as usize]
    }

    fn count(&self, u: i64) -> i64 {
        self.units.count[u as usize]
    }

    fn members_of(&self, u: i64) -> Option<&Vec<Entry>> {
        match self.slot[u as usize] {
            NONE => None,
            s => Some(&self.members[s as usize]),
        }
    }

    fn members_mut(&mut self, u: i64) -> &mut Vec<Entry> {
        if self.slot[u as usize] == NONE {
            self.slot[u as usize] = self.members.len() as u32;
            self.members.push(Vec::new());
        }
        &mut self.members[self.slot[u as usize] as usize]
    }

    fn n_members(&self, u: i64) -> usize {
        self.members_of(u).map_or(0, Vec::len)
    }

    /// Whether member `v` may leave its reference for one it scores `score` with: not away from a
    /// marked reference, and keeping at least `move_keeps` of its percentage.
    fn may_move(&self, v: i64, score: f64) -> bool {
        let r = self.chosen[v as usize];
        self.units.marked[r as usize] == 0 && score >= self.move_keeps * self.score_of[v as usize]
    }

    fn placed(&self, u: i64) -> bool {
        self.chosen[u as usize] >= 0
            || (self.is_ref[u as usize] && (self.n_members(u) > 0 || self.count(u) >= 2))
    }

    fn keeps_group(&self, r: i64, without: i64) -> bool {
        self.count(r) >= 2
            || self
                .members_of(r)
                .is_some_and(|m| m.iter().any(|e| e.unit != without))
    }

    /// `v` (visit position `pos`) becomes a member of `r` through pair `k`, with score `s`.
    fn join(&mut self, r: i64, v: i64, pos: i64, s: f64, k: i64) {
        self.members_mut(r).push(Entry {
            neg: -s,
            pos,
            unit: v,
            pair: k,
        });
        self.chosen[v as usize] = r;
        self.score_of[v as usize] = s;
    }

    /// The partner of `u` first in `key_cmp` order among the edges `ok` accepts: (partner, score, pair).
    fn best_edge(&self, u: i64, ok: impl Fn(&Self, i64, f64) -> bool) -> Option<(i64, f64, i64)> {
        let w = self.walk;
        let mut best: Option<((f64, i64, i64), i64)> = None;
        for e in self.edges(u) {
            let (v, s, k) = (i64::from(w.dst[e]), w.score[e], w.pair[e]);
            if !ok(self, v, s) {
                continue;
            }
            let key = (-s, self.pos_of(v), k);
            if best.is_none_or(|(b, _)| key_cmp(key, b) == Ordering::Less) {
                best = Some((key, v));
            }
        }
        best.map(|((neg, _, k), v)| (v, -neg, k))
    }

    /// Phase 1: in visit order, a unit not yet covered becomes a reference when it has copies,
    /// uncovered partners (which it covers) or a covered partner more similar to it than to any
    /// reference so far.
    fn choose_references(&mut self) {
        let w = self.walk;
        for i in 0..w.unit.len() {
            let u = w.unit[i];
            if self.assigned[u as usize] {
                continue;
            }
            let edges = w.start[i] as usize..w.end[i] as usize;
            let wanted = self.count(u) >= 2
                || edges.clone().any(|e| {
                    let v = w.dst[e] as usize;
                    !self.assigned[v] || w.score[e] > self.near_ref[v]
                });
            if !wanted {
                continue;
            }
            self.assigned[u as usize] = true;
            self.is_ref[u as usize] = true;
            self.refs.push((w.pos[i], u));
            self.members_mut(u);
            for e in edges {
                let v = w.dst[e] as usize;
                self.assigned[v] = true;
                self.near_ref[v] = self.near_ref[v].max(w.score[e]);
            }
        }
    }

    /// Phase 2: every covered unit joins the reference it is most similar to (ties: the reference
    /// visited first, then the first pair).
    fn join_best_references(&mut self) {
        let w = self.walk;
        for i in 0..w.unit.len() {
            let u = w.unit[i];
            if !self.assigned[u as usize] || self.is_ref[u as usize] {
                continue;
            }
            if let Some((r, s, k)) = self.best_edge(u, |st, v, _| st.is_ref[v as usize]) {
                self.join(r, u, w.pos[i], s, k);
            }
        }
    }

    /// A reference whose partners all went to better references takes back its best partner whose
    /// reference keeps another member, when that partner may move.
    fn take_back(&mut self) {
        for j in 0..self.refs.len() {
            let u = self.refs[j].1;
            if self.n_members(u) > 0 || self.count(u) >= 2 {
                continue;
            }
            let found = self.best_edge(u, |st, v, s| {
                let r = st.chosen[v as usize];
                r >= 0 && st.n_members(r) >= 2 && st.may_move(v, s)
            });
            if let Some((v, s, k)) = found {
                let r = self.chosen[v as usize];
                self.members_mut(r).retain(|e| e.unit != v);
                self.join(u, v, self.pos_of(v), s, k);
            }
        }
    }

    /// Gives a group to the units with a partner that are in none (see the module docstring of
    /// `simscan.similarity.grouping`): in visit order, such a unit joins its best partner that
    /// leads a group; else it takes its best partner that may move from a reference keeping a group
    /// without it; else that partner leads both (its old reference and this unit).
    fn place_orphans(&mut self) {
        let w = self.walk;
        for i in 0..w.unit.len() {
            let (u, pos) = (w.unit[i], w.pos[i]);
            if self.placed(u) {
                continue;
            }
            if let Some((v, s, k)) =
                self.best_edge(u, |st, v, _| st.is_ref[v as usize] && st.placed(v))
            {
                self.join(v, u, pos, s, k);
                self.is_ref[u as usize] = false;
                continue;
            }
            let led = self.best_edge(u, |st, v, s| {
                let r = st.chosen[v as usize];
                r >= 0
                    && if st.keeps_group(r, v) {
                        st.may_move(v, s)
                    } else {
                        st.units.marked[r as usize] == 0 // v leads its reference: nobody's percentage drops
                    }
            });
            let Some((v, s, k)) = led else { continue };
            let r = self.chosen[v as usize];
            let list = self.members_mut(r);
            let at = list
                .iter()
                .position(|e| e.unit == v)
                .expect("a member is in its reference's list");
            let entry = list.remove(at);
            let pos_v = self.pos_of(v);
            if self.n_members(r) > 0 || self.count(r) >= 2 {
                // r keeps a group: v moves to u.
                if !self.is_ref[u as usize] {
                    self.is_ref[u as usize] = true;
                    self.refs.push((pos, u));
                }
                self.members_mut(u).clear();
                self.join(u, v, pos_v, s, k);
            } else {
                // v leads r (through the pair that made v its member) and u.
                self.is_ref[r as usize] = false;
                self.is_ref[u as usize] = false;
                self.is_ref[v as usize] = true;
                self.refs.push((pos_v, v));
                self.chosen[v as usize] = -1;
                self.members_mut(v).clear();
                self.join(v, r, self.pos_of(r), -entry.neg, entry.pair);
                self.join(v, u, pos, s, k);
            }
        }
        self.refs.sort_unstable();
    }

    fn blocks(&self) -> Placed {
        let mut out = Placed::default();
        for &(pos, u) in &self.refs {
            let mine = self.members_of(u).map_or(&[][..], Vec::as_slice);
            if mine.is_empty() && self.count(u) < 2 {
                continue; // its partners all have better references: no group of one
            }
            out.group_pos.push(pos);
            out.block_pos.push(pos);
            out.block_seq.push(0);
            out.block_unit.push(u);
            out.block_pair.push(-1);
            let mut sorted = mine.to_vec();
            sorted.sort_by(entry_cmp);
            for (seq, e) in sorted.iter().enumerate() {
                out.block_pos.push(pos);
                out.block_seq.push(seq as i64 + 1);
                out.block_unit.push(e.unit);
                out.block_pair.push(e.pair);
            }
        }
        out
    }
}

/// The groups of the walk's units (`n`: units are below it; `move_keeps`: `MOVE_KEEPS`).
/// Panics when an index is out of range (the binding checks them first).
pub fn place(n: usize, walk: &Walk, units: &Units, move_keeps: f64) -> Placed {
    let mut widx = vec![NONE; n];
    for (i, &u) in walk.unit.iter().enumerate() {
        widx[u as usize] = i as u32;
    }
    let mut st = State {
        walk,
        units,
        move_keeps,
        assigned: vec![false; n],
        is_ref: vec![false; n],
        near_ref: vec![0.0; n],
        chosen: vec![-1; n],
        score_of: vec![0.0; n],
        widx,
        slot: vec![NONE; n],
        members: Vec::new(),
        refs: Vec::new(),
    };
    st.choose_references();
    st.join_best_references();
    st.take_back();
    st.place_orphans();
    st.blocks()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walk columns of an undirected graph's edges (a, b, score, pair) over units 0..n, visited
    /// in unit order.
    struct Graph {
        unit: Vec<i64>,
        start: Vec<i64>,
        end: Vec<i64>,
        dst: Vec<i32>,
        score: Vec<f64>,
        pair: Vec<i64>,
    }

    fn graph(n: usize, edges: &[(i64, i64, f64, i64)]) -> Graph {
        let mut directed: Vec<(i64, i64, f64, i64)> = edges
            .iter()
            .flat_map(|&(a, b, s, k)| [(a, b, s, k), (b, a, s, k)])
            .collect();
        directed.sort_by_key(|e| (e.0, e.3));
        let (mut unit, mut start, mut end) = (vec![], vec![], vec![]);
        for u in 0..n as i64 {
            let s = directed.partition_point(|e| e.0 < u) as i64;
            let t = directed.partition_point(|e| e.0 <= u) as i64;
            if t > s {
                unit.push(u);
                start.push(s);
                end.push(t);
            }
        }
        Graph {
            unit,
            start,
            end,
            dst: directed.iter().map(|e| e.1 as i32).collect(),
            score: directed.iter().map(|e| e.2).collect(),
            pair: directed.iter().map(|e| e.3).collect(),
        }
    }

    fn run(n: usize, edges: &[(i64, i64, f64, i64)], count: &[i64], marked: &[u8]) -> Placed {
        let g = graph(n, edges);
        let walk = Walk {
            pos: &g.unit,
            unit: &g.unit,
            start: &g.start,
            end: &g.end,
            dst: &g.dst,
            score: &g.score,
            pair: &g.pair,
        };
        place(n, &walk, &Units { count, marked }, 0.5)
    }

    #[test]
    fn a_star_is_one_group_best_member_first() {
        let p = run(
            4,
            &[(0, 1, 40.0, 1), (0, 2, 90.0, 0), (0, 3, 40.0, 2)],
            &[1; 4],
            &[0; 4],
        );
        assert_eq!(p.group_pos, vec![0]);
        assert_eq!(p.block_unit, vec![0, 2, 1, 3]);
        assert_eq!(p.block_pair, vec![-1, 0, 1, 2]);
        assert_eq!(p.block_seq, vec![0, 1, 2, 3]);
    }

    #[test]
    fn no_chaining_the_middle_unit_leads_both() {
        // 0~1, 1~2, 0 not like 2: 0 covers 1; 2, uncovered, is more like 1 than 0 is, so it becomes a
        // reference and 1 joins it; 0 is left alone, and 1 (whose reference keeps no other member)
        // leads both, best score first.
        let p = run(3, &[(0, 1, 20.0, 1), (1, 2, 95.0, 0)], &[1; 3], &[0; 3]);
        assert_eq!(p.group_pos, vec![1]);
        assert_eq!(p.block_unit, vec![1, 2, 0]);
        assert_eq!(p.block_pair, vec![-1, 0, 1]);
        // Under a reference folder, 2 keeps its member: 0 stays in no group.
        let q = run(3, &[(0, 1, 20.0, 1), (1, 2, 95.0, 0)], &[1; 3], &[0, 0, 1]);
        assert_eq!(q.block_unit, vec![2, 1]);
    }

    #[test]
    fn a_unit_of_copies_is_a_group_alone_and_loose_units_stay_out() {
        let p = run(3, &[(1, 2, 50.0, 0)], &[2, 1, 1], &[0; 3]);
        // Unit 0 has no edges: not in the walk (the caller groups it); 1 leads 2.
        assert_eq!(p.block_unit, vec![1, 2]);
        let empty = run(2, &[], &[1, 1], &[0; 2]);
        assert_eq!(empty, Placed::default());
    }
}
