//! Type checking: a parsed cut's names resolved against a tree's columns, its
//! functions checked, and every node given a shape (one value per entry, or one
//! per element of a collection), into a `Plan` the evaluator runs.

use super::AnalysisError;
use super::defines::Defines;
use super::prune::Bounds;
use super::source::{Origin, TreeObject};
use super::syntax::{BinOp, Expr, UnOp, parse};
use super::vecops::{self, VecOp};
use crate::formats::root::{Branch, ColumnLayout, LeafType, RNTuple, Tree, column_layout};

/// A column of a tree: a branch, or one leaf of a leaf list (`point.x`).
#[derive(Debug, Clone)]
pub struct ColumnInfo<'t> {
    /// As `list_branches` prints it: the '/'-joined branch path, and
    /// `path.leaf` for a leaf of a leaf list.
    pub path: String,
    /// The branch (or leaf) or RNTuple column read.
    pub origin: Origin<'t>,
    pub layout: Result<ColumnLayout, String>,
    /// The counter leaf of a jagged branch (`nMuon`).
    pub counter: Option<String>,
}

/// Every column of a tree, in branch order (depth first), with what is known
/// of their baskets' values (empty unless the caller adds it).
pub struct TreeColumns<'t> {
    pub entries: u64,
    pub columns: Vec<ColumnInfo<'t>>,
    pub bounds: Bounds,
}

impl<'t> TreeColumns<'t> {
    pub fn new(tree: &'t Tree) -> TreeColumns<'t> {
        let mut columns = Vec::new();
        add_columns(&tree.branches, "", &mut columns);
        TreeColumns {
            entries: u64::try_from(tree.entries).unwrap_or(0),
            columns,
            bounds: Bounds::default(),
        }
    }

    /// The columns of a TTree or an RNTuple.
    pub fn of(object: &'t TreeObject) -> TreeColumns<'t> {
        match object {
            TreeObject::TTree(tree) => TreeColumns::new(tree),
            TreeObject::RNTuple(nt) => TreeColumns::of_ntuple(nt),
        }
    }

    /// An RNTuple's leaf columns (`Muon.pt`), typed as TTree branches are.
    pub fn of_ntuple(nt: &'t RNTuple) -> TreeColumns<'t> {
        let columns = nt
            .columns
            .iter()
            .map(|column| ColumnInfo {
                path: column.path.clone(),
                origin: Origin::Ntuple { ntuple: nt, column },
                layout: column.layout.clone(),
                // A collection that is the column itself (a top-level
                // `std::vector<float>`) is known to match no other: its
                // lengths are compared entry by entry, as a TTree branch's
                // without a counter leaf. A cardinality field or a record's
                // collection (`Muon` of `Muon.pt`) is a shared counter.
                counter: column.counter.clone().filter(|c| *c != column.path),
            })
            .collect();
        TreeColumns {
            entries: nt.entries,
            columns,
            bounds: Bounds::default(),
        }
    }

    /// The column a name means: its path, else its last part (`Px` for
    /// `evt/P3/P3.Px`, or the part after the last '/') when that is unique.
    pub fn find(&self, name: &str) -> Option<usize> {
        if let Some(i) = self.columns.iter().position(|c| c.path == name) {
            return Some(i);
        }
        let short = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
        let matches: Vec<usize> = (0..self.columns.len())
            .filter(|&i| {
                let p = &self.columns[i].path;
                short(p) == name || p.ends_with(&format!(".{name}")) && !name.contains('/')
            })
            .collect();
        match matches.as_slice() {
            [only] => Some(*only),
            _ => None,
        }
    }

    /// A column looked up for a tool argument, `branch_not_found` otherwise.
    pub fn require(&self, name: &str) -> Result<usize, AnalysisError> {
        self.find(name)
            .ok_or_else(|| AnalysisError::BranchNotFound {
                name: name.to_string(),
                closest: self.closest(name),
            })
    }

    /// Up to five column paths closest to `name` (edit distance, case folded).
    pub fn closest(&self, name: &str) -> Vec<String> {
        let lower = name.to_lowercase();
        let mut scored: Vec<(usize, &str)> = self
            .columns
            .iter()
            .map(|c| {
                let short = c.path.rsplit('/').next().unwrap_or(&c.path).to_lowercase();
                let d = edit_distance(&lower, &short)
                    .min(edit_distance(&lower, &c.path.to_lowercase()));
                (d, c.path.as_str())
            })
            .collect();
        scored.sort();
        let limit = (name.chars().count() / 2).max(3);
        scored
            .into_iter()
            .filter(|(d, _)| *d <= limit)
            .take(5)
            .map(|(_, p)| p.to_string())
            .collect()
    }

    pub(super) fn is_path_prefix(&self, prefix: &str) -> bool {
        self.columns.iter().any(|c| {
            c.path == prefix
                || c.path
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with('/') || rest.starts_with('.'))
        })
    }
}

fn add_columns<'t>(branches: &'t [Branch], parent: &str, out: &mut Vec<ColumnInfo<'t>>) {
    for b in branches {
        let path = if parent.is_empty() {
            b.name.clone()
        } else {
            format!("{parent}/{}", b.name)
        };
        let counter = b.leaves.first().and_then(|l| l.count.clone());
        out.push(ColumnInfo {
            path: path.clone(),
            origin: Origin::Branch {
                branch: b,
                leaf: None,
            },
            layout: column_layout(b, None).map_err(|e| e.to_string()),
            counter: counter.clone(),
        });
        if b.element.is_none() && b.leaves.len() > 1 {
            for (i, leaf) in b.leaves.iter().enumerate() {
                out.push(ColumnInfo {
                    path: format!("{path}.{}", leaf.name),
                    origin: Origin::Branch {
                        branch: b,
                        leaf: Some(i),
                    },
                    layout: column_layout(b, Some(i)).map_err(|e| e.to_string()),
                    counter: None,
                });
            }
        }
        add_columns(&b.branches, &path, out);
    }
}

pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for j in 0..b.len() {
            let next = (diag + usize::from(ca != b[j]))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Which collection a per-element value runs over. Two values of the same
/// collection pair up element by element; `certain` collections (a counter
/// leaf, a fixed size) are known to differ from other certain ones, the others
/// (`std::vector` branches, computed lengths) are compared entry by entry.
/// The pairs of a collection (`PairFirst`) are a collection of their own,
/// never of the length of a collection of elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collection {
    pub key: String,
    pub certain: bool,
    /// A branch of the collection (or the expression making it), for messages.
    pub branch: String,
    pub pairs: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// One value per entry.
    Scalar,
    /// One value per element of a collection.
    Jagged(Collection),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    Length,
    Sum,
    Min,
    Max,
    MinIf,
    MaxIf,
}

/// How a one-argument function maps a range of numbers, for ruling out
/// clusters a cut cannot select (`prune`): the image of `[lo, hi]` is
/// `[f(lo), f(hi)]` for a rising function, `[f(hi), f(lo)]` for a falling one,
/// and for a valley (lowest at 0, rising both ways) `[f(0) or the nearer end,
/// the larger of f(lo), f(hi)]`. Anything else is not bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Curve {
    Rising,
    Falling,
    Valley,
    Other,
}

/// The cut language's functions of one number. An enum rather than a function
/// pointer so the evaluator picks the function once per window and runs a
/// loop the compiler can inline and vectorise (`abs` in a cut would otherwise
/// be an indirect call per element).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fn1 {
    Abs,
    Sqrt,
    Exp,
    Ln,
    Log10,
    Log2,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Floor,
    Ceil,
    Square,
}

impl Fn1 {
    #[inline(always)]
    pub fn call(self, x: f64) -> f64 {
        match self {
            Fn1::Abs => x.abs(),
            Fn1::Sqrt => x.sqrt(),
            Fn1::Exp => x.exp(),
            Fn1::Ln => x.ln(),
            Fn1::Log10 => x.log10(),
            Fn1::Log2 => x.log2(),
            Fn1::Sin => x.sin(),
            Fn1::Cos => x.cos(),
            Fn1::Tan => x.tan(),
            Fn1::Asin => x.asin(),
            Fn1::Acos => x.acos(),
            Fn1::Atan => x.atan(),
            Fn1::Sinh => x.sinh(),
            Fn1::Cosh => x.cosh(),
            Fn1::Tanh => x.tanh(),
            Fn1::Floor => x.floor(),
            Fn1::Ceil => x.ceil(),
            Fn1::Square => x * x,
        }
    }
}

/// The cut language's functions of two numbers.
pub type Func2 = fn(f64, f64) -> f64;

/// Which two-argument functions `prune` can bound: `min` and `max` give back
/// one of their arguments; the others are not bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pair {
    Min,
    Max,
    Other,
}

/// A checked expression: what the evaluator runs.
#[derive(Debug, Clone)]
pub enum Node {
    Const(f64),
    /// A column, by its slot in `Plan::columns`.
    Column(usize),
    /// Element `index` of each entry of a collection column (missing = invalid).
    Index {
        slot: usize,
        index: usize,
    },
    Unary(UnOp, Box<Node>),
    Binary(BinOp, Box<Node>, Box<Node>),
    Func1(Fn1, Curve, Box<Node>),
    Func2(Func2, Pair, Box<Node>, Box<Node>),
    Aggregate(Aggregate, Box<Node>, Option<Box<Node>>),
    /// `Alt$(primary, alternative)`: the alternative where the primary is missing.
    Alt(Box<Node>, Box<Node>),
    /// A ROOT::VecOps function of its arguments (`vecops`).
    Vec(VecOp, Vec<Node>),
}

/// A checked cut (or value expression): its tree, and the columns it reads.
#[derive(Debug, Clone)]
pub struct Plan {
    pub root: Node,
    pub shape: Shape,
    /// Indices into `TreeColumns::columns` of the columns read, by slot.
    pub columns: Vec<usize>,
    /// The text it was parsed from.
    pub text: String,
}

impl Plan {
    /// Parses and checks a cut or value expression against a tree's columns.
    pub fn new(text: &str, tree: &TreeColumns<'_>) -> Result<Plan, AnalysisError> {
        Plan::with_defines(text, tree, &Defines::default())
    }

    /// `new`, where names may also be those of `defines` (expressions named
    /// by the call, RDataFrame's `Define`), which the plan computes in place.
    pub fn with_defines(
        text: &str,
        tree: &TreeColumns<'_>,
        defines: &Defines,
    ) -> Result<Plan, AnalysisError> {
        let expr = parse(text, &|p| tree.is_path_prefix(p))?;
        let mut checker = Checker::new(tree, defines);
        let (root, shape) = checker.check(&expr)?;
        Ok(Plan {
            root,
            shape,
            columns: checker.columns,
            text: text.to_string(),
        })
    }

    /// A plan that reads one column as it is (a histogrammed or read branch).
    pub fn column(name: &str, tree: &TreeColumns<'_>) -> Result<Plan, AnalysisError> {
        let index = tree.require(name)?;
        let none = Defines::EMPTY;
        let mut checker = Checker::new(tree, &none);
        let (root, shape) = checker.column(index, name, 0)?;
        Ok(Plan {
            root,
            shape,
            columns: checker.columns,
            text: name.to_string(),
        })
    }

    pub fn is_jagged(&self) -> bool {
        matches!(self.shape, Shape::Jagged(_))
    }
}

/// Nodes one plan may have once its defines are expanded in place: defines
/// that each use the last twice would otherwise double it at every step.
const MAX_NODES: usize = 100_000;
/// Calls and unary operators nested in one another at most: what one cut
/// string can reach (`syntax` nests at most 64 deep), so defines written out
/// in place never nest deeper than a cut could. And nodes deep at most
/// inside a define's expansion (a cut alone chains up to `MAX_LEN / 2`
/// operators; defines of chains of defines would multiply that): the
/// checking, evaluation and pruning walk the tree recursively.
const MAX_CALL_NESTING: usize = 64;
const MAX_DEFINED_DEPTH: usize = 256;

pub(super) struct Checker<'a, 't> {
    tree: &'a TreeColumns<'t>,
    columns: Vec<usize>,
    defines: &'a Defines,
    /// The defines being expanded, outermost first (a cycle's path).
    expanding: Vec<String>,
    nodes: usize,
    /// The node being checked: how deep, and inside how many calls and
    /// unary operators.
    depth: usize,
    calls: usize,
}

pub(super) type Checked = (Node, Shape);

impl<'a, 't> Checker<'a, 't> {
    fn new(tree: &'a TreeColumns<'t>, defines: &'a Defines) -> Checker<'a, 't> {
        Checker {
            tree,
            columns: Vec::new(),
            defines,
            expanding: Vec::new(),
            nodes: 0,
            depth: 0,
            calls: 0,
        }
    }

    /// A define's expression checked in place of its name.
    fn define(&mut self, name: &str, at: usize) -> Result<Checked, AnalysisError> {
        let expr = self.defines.enter(name, &self.expanding, self.tree, at)?;
        self.expanding.push(name.to_string());
        let checked = self.check(&expr);
        self.expanding.pop();
        checked.map_err(|e| Defines::located(name, e))
    }
}

impl Checker<'_, '_> {
    fn slot(&mut self, column: usize) -> usize {
        match self.columns.iter().position(|&c| c == column) {
            Some(s) => s,
            None => {
                self.columns.push(column);
                self.columns.len() - 1
            }
        }
    }

    pub(super) fn check(&mut self, e: &Expr) -> Result<Checked, AnalysisError> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(AnalysisError::invalid(
                0,
                &format!("an expression of at most {MAX_NODES} parts"),
                format!(
                    "the expression has more than {MAX_NODES} parts once its defines are written out; \
use each define fewer times"
                ),
            ));
        }
        let nests = matches!(e, Expr::Unary(..) | Expr::Call { .. });
        self.depth += 1;
        self.calls += usize::from(nests);
        let too_deep = !self.expanding.is_empty() && self.depth > MAX_DEFINED_DEPTH;
        let checked = if self.calls > MAX_CALL_NESTING || too_deep {
            Err(AnalysisError::invalid(
                first_column(e),
                "an expression no deeper than one cut can be",
                format!(
                    "the expression nests more than {MAX_CALL_NESTING} calls (or {MAX_DEFINED_DEPTH} operations) \
deep once its defines are written out; nest the defines less"
                ),
            ))
        } else {
            self.check_node(e)
        };
        self.depth -= 1;
        self.calls -= usize::from(nests);
        checked
    }

    fn check_node(&mut self, e: &Expr) -> Result<Checked, AnalysisError> {
        match e {
            Expr::Num(n) => Ok((Node::Const(*n), Shape::Scalar)),
            Expr::Name { name, at } if self.defines.get(name).is_some() => self.define(name, *at),
            Expr::Name { name, at } => {
                let index = self.tree.find(name).ok_or_else(|| self.not_found(name))?;
                self.column(index, name, *at)
            }
            Expr::Index { name, index, at } if self.defines.get(name).is_some() => {
                let (node, shape) = self.define(name, *at)?;
                vecops::element(node, shape, (name, *index), *at)
            }
            Expr::Index { name, index, at } => {
                // ROOT keeps a fixed array's size in its branch name
                // (`ArrayI32[10]`): that name means the whole column.
                let whole = format!("{name}[{index}]");
                if self.tree.find(name).is_none()
                    && let Some(column) = self.tree.find(&whole)
                {
                    return self.column(column, &whole, *at);
                }
                let column = self.tree.find(name).ok_or_else(|| self.not_found(name))?;
                let (node, shape) = self.column(column, name, *at)?;
                let Node::Column(slot) = node else {
                    unreachable!("a column checks to a column")
                };
                if shape == Shape::Scalar {
                    return Err(vecops::not_indexable(*at, &format!("'{name}' holds")));
                }
                Ok((
                    Node::Index {
                        slot,
                        index: *index,
                    },
                    Shape::Scalar,
                ))
            }
            Expr::IndexBy { name, index, at } => {
                let name = Expr::Name {
                    name: name.clone(),
                    at: *at,
                };
                let collection = self.check(&name)?;
                let index = self.check(index)?;
                vecops::element_by(collection, index, *at)
            }
            Expr::Unary(op, inner) => {
                let (node, shape) = self.check(inner)?;
                Ok((Node::Unary(*op, Box::new(node)), shape))
            }
            Expr::Binary(op, l, r) => {
                let (ln, ls) = self.check(l)?;
                let (rn, rs) = self.check(r)?;
                let shape = combine(&ls, &rs, first_column(e))?;
                Ok((Node::Binary(*op, Box::new(ln), Box::new(rn)), shape))
            }
            Expr::Call { func, args, at } => self.call(func, args, *at),
        }
    }

    fn not_found(&self, name: &str) -> AnalysisError {
        AnalysisError::BranchNotFound {
            name: name.to_string(),
            closest: self.defines.closest_with(name, self.tree.closest(name)),
        }
    }

    fn column(&mut self, index: usize, name: &str, at: usize) -> Result<Checked, AnalysisError> {
        let info = &self.tree.columns[index];
        let layout = match &info.layout {
            Ok(l) => *l,
            Err(why) => {
                return Err(AnalysisError::UnsupportedType {
                    name: info.path.clone(),
                    why: why.clone(),
                });
            }
        };
        if layout.leaf_type == LeafType::Str {
            return Err(AnalysisError::UnsupportedType {
                name: info.path.clone(),
                why: format!(
                    "a string branch{} cannot be used in a cut or a numeric result",
                    if at > 0 {
                        format!(" (column {at})")
                    } else {
                        String::new()
                    }
                ),
            });
        }
        if layout.jagged && layout.inner > 1 {
            return Err(AnalysisError::UnsupportedType {
                name: info.path.clone(),
                why: "a collection of fixed-size arrays ([][N]) cannot be used in a cut yet".into(),
            });
        }
        let shape = if layout.jagged {
            Shape::Jagged(match &info.counter {
                Some(counter) => Collection {
                    key: format!("counter:{counter}"),
                    certain: true,
                    branch: info.path.clone(),
                    pairs: false,
                },
                None => Collection {
                    key: format!("branch:{}", info.path),
                    certain: false,
                    branch: info.path.clone(),
                    pairs: false,
                },
            })
        } else if layout.inner > 1 {
            Shape::Jagged(Collection {
                key: format!("fixed:{}", layout.inner),
                certain: true,
                branch: info.path.clone(),
                pairs: false,
            })
        } else {
            Shape::Scalar
        };
        let _ = name;
        Ok((Node::Column(self.slot(index)), shape))
    }

    fn call(&mut self, func: &str, args: &[Expr], at: usize) -> Result<Checked, AnalysisError> {
        let bare = func.strip_prefix("TMath::").unwrap_or(func);
        let arity = |n: usize| arity(func, args, n, at);
        if let Some(value) = constant(func) {
            arity(0)?;
            return Ok((Node::Const(value), Shape::Scalar));
        }
        if let Some((f, curve)) = unary_function(func, bare) {
            arity(1)?;
            let (n, s) = self.check(&args[0])?;
            return Ok((Node::Func1(f, curve, Box::new(n)), s));
        }
        if let Some((f, pair)) = binary_function(func, bare) {
            arity(2)?;
            let (a, sa) = self.check(&args[0])?;
            let (b, sb) = self.check(&args[1])?;
            let shape = combine(&sa, &sb, at)?;
            return Ok((Node::Func2(f, pair, Box::new(a), Box::new(b)), shape));
        }
        let aggregate = match func {
            "Length$" => Aggregate::Length,
            "Sum$" => Aggregate::Sum,
            "Min$" => Aggregate::Min,
            "Max$" => Aggregate::Max,
            "MinIf$" => Aggregate::MinIf,
            "MaxIf$" => Aggregate::MaxIf,
            "Alt$" => {
                arity(2)?;
                let (a, sa) = self.check(&args[0])?;
                let (b, sb) = self.check(&args[1])?;
                let shape = combine(&sa, &sb, at)?;
                return Ok((Node::Alt(Box::new(a), Box::new(b)), shape));
            }
            _ => match vecops::named(func) {
                Some(f) => return vecops::check(self, f, (func, args), at),
                None => {
                    return Err(AnalysisError::invalid(
                        at,
                        "a known function",
                        format!(
                            "at column {at}: unknown function '{func}' (cuts know abs sqrt exp log log10 pow sin cos tan \
asin acos atan atan2 sinh cosh tanh min max floor ceil hypot, their TMath:: spellings, TMath::Pi(), Length$ Sum$ \
Min$ Max$ MinIf$ MaxIf$ Alt$, and ROOT::VecOps' {})",
                            vecops::NAMES.join(" ")
                        ),
                    ));
                }
            },
        };
        let conditional = matches!(aggregate, Aggregate::MinIf | Aggregate::MaxIf);
        arity(if conditional { 2 } else { 1 })?;
        let (value, vs) = self.check(&args[0])?;
        let condition = if conditional {
            let (c, cs) = self.check(&args[1])?;
            combine(&vs, &cs, at)?;
            Some(Box::new(c))
        } else {
            None
        };
        Ok((
            Node::Aggregate(aggregate, Box::new(value), condition),
            Shape::Scalar,
        ))
    }
}

/// `func`'s arguments counted: `n`, or an error saying so.
pub(super) fn arity(func: &str, args: &[Expr], n: usize, at: usize) -> Result<(), AnalysisError> {
    if args.len() == n {
        Ok(())
    } else {
        Err(AnalysisError::invalid(
            at,
            &format!("{n} argument(s) for {func}"),
            format!(
                "at column {at}: {func} takes {n} argument(s), got {}",
                args.len()
            ),
        ))
    }
}

/// The column where an expression starts, for messages.
pub(super) fn first_column(e: &Expr) -> usize {
    match e {
        Expr::Num(_) => 0,
        Expr::Name { at, .. }
        | Expr::Index { at, .. }
        | Expr::IndexBy { at, .. }
        | Expr::Call { at, .. } => *at,
        Expr::Unary(_, inner) => first_column(inner),
        Expr::Binary(_, l, r) => match first_column(l) {
            0 => first_column(r),
            at => at,
        },
    }
}

/// The shape of an element-wise combination: scalars broadcast over a
/// collection; two collections must be the same one. Pairs and elements
/// never line up (n elements make n(n-1)/2 pairs), even where the lengths
/// are only known entry by entry.
pub(super) fn combine(a: &Shape, b: &Shape, at: usize) -> Result<Shape, AnalysisError> {
    match (a, b) {
        (Shape::Scalar, s) | (s, Shape::Scalar) => Ok(s.clone()),
        (Shape::Jagged(x), Shape::Jagged(y)) => {
            if x.key == y.key || (!(x.certain && y.certain) && x.pairs == y.pairs) {
                Ok(a.clone())
            } else if x.pairs != y.pairs {
                Err(vecops::pairs_and_elements(x, y, at))
            } else {
                Err(mixed_collections(&x.branch, &y.branch, at))
            }
        }
    }
}

/// The error for two collections of different lengths paired element-wise.
pub fn mixed_collections(a: &str, b: &str, at: usize) -> AnalysisError {
    AnalysisError::invalid(
        at,
        "collections of one length, or an aggregate",
        format!(
            "'{a}' and '{b}' are collections of different lengths, so an element-wise cut cannot pair their \
elements; reduce one to a value per entry with an aggregate, e.g. Sum$({b} > 0) > 0, Max$({b}), Length$({b}) or {b}[0]"
        ),
    )
}

pub fn constant(func: &str) -> Option<f64> {
    Some(match func {
        "TMath::Pi" => std::f64::consts::PI,
        "TMath::TwoPi" => std::f64::consts::TAU,
        "TMath::PiOver2" => std::f64::consts::FRAC_PI_2,
        "TMath::PiOver4" => std::f64::consts::FRAC_PI_4,
        "TMath::E" => std::f64::consts::E,
        "TMath::Sqrt2" => std::f64::consts::SQRT_2,
        "TMath::Ln10" => std::f64::consts::LN_10,
        _ => return None,
    })
}

pub fn unary_function(func: &str, bare: &str) -> Option<(Fn1, Curve)> {
    use Curve::{Falling, Other, Rising, Valley};
    let tmath = func.starts_with("TMath::");
    let (f, curve): (Fn1, Curve) = match (tmath, bare) {
        (false, "abs" | "fabs") | (true, "Abs") => (Fn1::Abs, Valley),
        (false, "sqrt") | (true, "Sqrt") => (Fn1::Sqrt, Rising),
        (false, "exp") | (true, "Exp") => (Fn1::Exp, Rising),
        (false, "log") | (true, "Log") => (Fn1::Ln, Rising),
        (false, "log10") | (true, "Log10") => (Fn1::Log10, Rising),
        (true, "Log2") | (false, "log2") => (Fn1::Log2, Rising),
        (false, "sin") | (true, "Sin") => (Fn1::Sin, Other),
        (false, "cos") | (true, "Cos") => (Fn1::Cos, Other),
        (false, "tan") | (true, "Tan") => (Fn1::Tan, Other),
        (false, "asin") | (true, "ASin") => (Fn1::Asin, Rising),
        (false, "acos") | (true, "ACos") => (Fn1::Acos, Falling),
        (false, "atan") | (true, "ATan") => (Fn1::Atan, Rising),
        (false, "sinh") | (true, "SinH") => (Fn1::Sinh, Rising),
        (false, "cosh") | (true, "CosH") => (Fn1::Cosh, Valley),
        (false, "tanh") | (true, "TanH") => (Fn1::Tanh, Rising),
        (false, "floor") | (true, "Floor") => (Fn1::Floor, Rising),
        (false, "ceil") | (true, "Ceil") => (Fn1::Ceil, Rising),
        (true, "Sq") => (Fn1::Square, Valley),
        _ => return None,
    };
    Some((f, curve))
}

pub fn binary_function(func: &str, bare: &str) -> Option<(Func2, Pair)> {
    let tmath = func.starts_with("TMath::");
    let (f, pair): (Func2, Pair) = match (tmath, bare) {
        (false, "pow") | (true, "Power") => (f64::powf, Pair::Other),
        (false, "atan2") | (true, "ATan2") => (f64::atan2, Pair::Other),
        (false, "hypot") | (true, "Hypot") => (f64::hypot, Pair::Other),
        (false, "fmod") => (|a, b| a % b, Pair::Other),
        // C's fmin/fmax and TMath::Min/Max: the smaller or larger.
        (false, "min" | "fmin") | (true, "Min") => {
            (|a: f64, b: f64| if b < a { b } else { a }, Pair::Min)
        }
        (false, "max" | "fmax") | (true, "Max") => {
            (|a: f64, b: f64| if b > a { b } else { a }, Pair::Max)
        }
        _ => return None,
    };
    Some((f, pair))
}
