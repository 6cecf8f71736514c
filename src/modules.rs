//! Per-module attribution: GPU and CPU time by the model's modules, as a tree.
//!
//! Module frames are the `nn.Module: Name_N` Python-function ranges (`with_modules`,
//! `with_stack`) and `record_function` labels (user annotations). Each event's module is the
//! path of frames enclosing it on its thread; a backward op linked to its forward op (`fwdbwd`
//! flows) takes its forward op's module, so backward kernels count for the module that ran
//! forward. A piece of GPU work counts for the module of the CPU call that launched it (the
//! launch link by correlation). Reads only the model.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::model::{Trace, NONE};

/// The module tree of one trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModuleTree {
    /// Preorder (a node's children follow it), children by GPU time, most first; no root node:
    /// top-level modules have no parent.
    pub nodes: Vec<ModuleNode>,
    /// All GPU work (kernels, collectives, copies, memsets) of the trace.
    pub gpu_ns: i64,
    /// GPU work launched outside every module frame, or with no known launch.
    pub outside_gpu_ns: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModuleNode {
    /// The frame's name (`Linear_3` for `nn.Module: Linear_3`, or the label).
    pub name: String,
    /// The names from the top-level frame down, joined by `/`.
    pub path: String,
    pub depth: usize,
    pub parent: Option<usize>,
    /// Whether the frame is an `nn.Module` (else a `record_function` label).
    pub module: bool,
    pub calls: u64,
    /// Time in the frame's ranges on the CPU.
    pub cpu_ns: i64,
    /// GPU work launched within the frame, its sub-frames included, forward and backward.
    pub gpu_ns: i64,
    /// The part of `gpu_ns` launched from backward ops (linked to the frame's forward ops).
    pub backward_gpu_ns: i64,
    pub kernels: u64,
}

/// Nodes in creation order, with their children, and a lookup by (parent, name).
#[derive(Default)]
struct Builder {
    nodes: Vec<ModuleNode>,
    children: FxHashMap<(u32, String), u32>,
}

impl Builder {
    fn child(&mut self, parent: u32, name: &str, module: bool) -> u32 {
        if let Some(&k) = self.children.get(&(parent, name.to_string())) {
            return k;
        }
        let k = self.nodes.len() as u32;
        let (path, depth) = match parent {
            NONE => (name.to_string(), 0),
            p => {
                let p = &self.nodes[p as usize];
                (format!("{}/{name}", p.path), p.depth + 1)
            }
        };
        self.nodes.push(ModuleNode {
            name: name.to_string(),
            path,
            depth,
            parent: (parent != NONE).then_some(parent as usize),
            module,
            calls: 0,
            cpu_ns: 0,
            gpu_ns: 0,
            backward_gpu_ns: 0,
            kernels: 0,
        });
        self.children.insert((parent, name.to_string()), k);
        k
    }
}

/// Each event's innermost module frame: what the tree is built from, and what names the module of
/// a finding's evidence ([`Frames::holder`]).
pub struct Frames {
    /// The frames in creation order (the tree's nodes before sorting, no times yet).
    nodes: Vec<ModuleNode>,
    /// Per event, its frame's node (`NONE`: outside every frame).
    ctx: Vec<u32>,
    /// Per event, whether it takes its frame from a forward op (backward).
    backward: Vec<bool>,
}

impl Frames {
    /// The frames of `t`, or `None` when it has no module frame.
    pub fn of(t: &Trace) -> Option<Frames> {
        let e = &t.events;
        let mut b = Builder::default();
        // The innermost enclosing frame's node of every event (NONE: outside every frame),
        // through the call tree only: parents come before their children in the event order.
        let mut ctx = vec![NONE; e.len()];
        // Frames grafted from a capture trace name the modules of replayed kernels; their
        // calls and host time are the capture's, not counted.
        let recorded = t.recorded();
        for i in 0..e.len() {
            let p = e.parent[i];
            let above = if p != NONE && (p as usize) < i {
                ctx[p as usize]
            } else {
                NONE
            };
            ctx[i] = match t.module_frame(i) {
                Some((name, module)) => {
                    let node = b.child(above, name, module);
                    if recorded.contains(&i) {
                        b.nodes[node as usize].calls += 1;
                        b.nodes[node as usize].cpu_ns += e.dur[i];
                    }
                    node
                }
                None => above,
            };
        }
        if b.nodes.is_empty() {
            return None;
        }
        // Backward ops take their forward op's module, and so does what they call.
        let forward_of: FxHashMap<u32, u32> = t
            .forward_backward
            .iter()
            .map(|l| (l.backward, l.forward))
            .collect();
        let mut backward = vec![false; e.len()];
        for i in 0..e.len() {
            let p = e.parent[i];
            let inherited = p != NONE && (p as usize) < i && backward[p as usize];
            if let Some(&f) = forward_of.get(&(i as u32)) {
                if ctx[i] == NONE && ctx[f as usize] != NONE {
                    ctx[i] = ctx[f as usize];
                    backward[i] = true;
                }
            } else if inherited && t.module_frame(i).is_none() {
                ctx[i] = ctx[p as usize];
                backward[i] = true;
            }
        }
        Some(Frames {
            nodes: b.nodes,
            ctx,
            backward,
        })
    }

    /// The event whose frame event `i` counts for: for GPU work, the call that launched it
    /// (for graph-replayed work tied to a recorded launch, that launch: `Trace::origin_of`;
    /// `None` without a known launch); else itself.
    fn counted_at(t: &Trace, i: usize) -> Option<usize> {
        if t.events.kind[i].is_gpu_work() {
            t.origin_of(i as u32).map(|l| l as usize)
        } else {
            Some(i)
        }
    }

    /// The deepest `nn.Module` frame holding more than half of the time of `events` (GPU work
    /// by the call that launched it), as the path of its module frames
    /// (`ResNet_0/Sequential_3/BasicBlock_1/Conv2d_2`; `record_function` labels on the way are
    /// crossed, never named); `None` when no module frame holds more than half.
    pub fn holder(&self, t: &Trace, events: &[usize]) -> Option<String> {
        let e = &t.events;
        let mut time = vec![0i64; self.nodes.len()];
        let mut total = 0i64;
        for &i in events {
            total += e.dur[i];
            let mut node = Frames::counted_at(t, i).map_or(NONE, |at| self.ctx[at]);
            while node != NONE {
                time[node as usize] += e.dur[i];
                node = self.nodes[node as usize].parent.map_or(NONE, |p| p as u32);
            }
        }
        let mut held: Option<usize> = None;
        let mut modules: Vec<&str> = Vec::new();
        loop {
            let heaviest = (0..self.nodes.len())
                .filter(|&k| self.nodes[k].parent == held)
                .max_by_key(|&k| (time[k], std::cmp::Reverse(k)));
            match heaviest {
                Some(k) if time[k] * 2 > total => {
                    held = Some(k);
                    if self.nodes[k].module {
                        modules.push(&self.nodes[k].name);
                    }
                }
                _ => return (!modules.is_empty()).then(|| modules.join("/")),
            }
        }
    }
}

impl ModuleTree {
    /// The tree, or `None` when the trace has no module frame.
    pub fn of(t: &Trace) -> Option<ModuleTree> {
        let Frames {
            mut nodes,
            ctx,
            backward,
        } = Frames::of(t)?;
        let e = &t.events;
        let mut tree = ModuleTree {
            nodes: Vec::new(),
            gpu_ns: 0,
            outside_gpu_ns: 0,
        };
        for g in 0..e.len() {
            if !e.kind[g].is_gpu_work() {
                continue;
            }
            tree.gpu_ns += e.dur[g];
            let Some(l) = Frames::counted_at(t, g) else {
                tree.outside_gpu_ns += e.dur[g];
                continue;
            };
            let mut node = ctx[l];
            if node == NONE {
                tree.outside_gpu_ns += e.dur[g];
            }
            while node != NONE {
                let n = &mut nodes[node as usize];
                n.gpu_ns += e.dur[g];
                n.kernels += 1;
                if backward[l] {
                    n.backward_gpu_ns += e.dur[g];
                }
                node = n.parent.map_or(NONE, |p| p as u32);
            }
        }
        tree.nodes = by_time(nodes);
        Some(tree)
    }
}

/// The indices of `nodes` (each with its `parent`) in preorder, siblings ordered by `cmp` (ties
/// by index): how the tree is stored, and how the web app re-sorts it.
pub fn preorder(
    nodes: &[ModuleNode],
    cmp: impl Fn(&ModuleNode, &ModuleNode) -> std::cmp::Ordering,
) -> Vec<usize> {
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut roots = Vec::new();
    for (k, n) in nodes.iter().enumerate() {
        match n.parent {
            Some(p) => children[p].push(k),
            None => roots.push(k),
        }
    }
    let order = |list: &mut Vec<usize>| {
        list.sort_by(|&x, &y| cmp(&nodes[x], &nodes[y]).then(x.cmp(&y)));
    };
    order(&mut roots);
    children.iter_mut().for_each(order);
    let mut out = Vec::with_capacity(nodes.len());
    let mut stack: Vec<usize> = roots.into_iter().rev().collect();
    while let Some(k) = stack.pop() {
        out.push(k);
        stack.extend(children[k].iter().rev());
    }
    out
}

/// The nodes in preorder, siblings by GPU time then CPU time (most first), parents renumbered.
fn by_time(nodes: Vec<ModuleNode>) -> Vec<ModuleNode> {
    let order = preorder(&nodes, |a, b| {
        (b.gpu_ns, b.cpu_ns).cmp(&(a.gpu_ns, a.cpu_ns))
    });
    let mut new_index = vec![0usize; nodes.len()];
    for (at, &k) in order.iter().enumerate() {
        new_index[k] = at;
    }
    order
        .iter()
        .map(|&k| {
            let mut n = nodes[k].clone();
            n.parent = n.parent.map(|p| new_index[p]);
            n
        })
        .collect()
}
