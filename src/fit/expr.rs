//! A fit model written as an expression of the cut language with named
//! parameters: `x` is the observable, every other name a parameter (in the
//! order they first appear). It is parsed by the analysis engine's parser and
//! compiled into a small tree evaluated on one number at a time.

use crate::analysis::eval::{apply, truth};
use crate::analysis::plan::{Fn1, Func2, binary_function, constant, unary_function};
use crate::analysis::syntax::{self, BinOp, Expr, UnOp};

/// A compiled expression: `Var(0)` is `x`, `Var(i + 1)` parameter `i`.
#[derive(Debug, Clone)]
pub enum Node {
    Const(f64),
    Var(usize),
    Neg(Box<Node>),
    Not(Box<Node>),
    Binary(BinOp, Box<Node>, Box<Node>),
    F1(Fn1, Box<Node>),
    F2(Func2, Box<Node>, Box<Node>),
}

/// A free model: the compiled tree and its parameters' names.
#[derive(Debug, Clone)]
pub struct FreeExpr {
    pub text: String,
    pub root: Node,
    pub params: Vec<String>,
}

/// Compiles `text`; the error says what is wrong and where.
pub fn compile(text: &str) -> Result<FreeExpr, String> {
    let parsed = syntax::parse(text, &|_| false).map_err(|e| e.to_string())?;
    let mut params = Vec::new();
    let root = node(&parsed, &mut params)?;
    if !uses_x(&root) {
        return Err(format!(
            "the model '{text}' does not use the observable x (write the shape in x, e.g. 'a*exp(-x/t)')"
        ));
    }
    Ok(FreeExpr {
        text: text.to_string(),
        root,
        params,
    })
}

fn uses_x(n: &Node) -> bool {
    match n {
        Node::Const(_) => false,
        Node::Var(i) => *i == 0,
        Node::Neg(a) | Node::Not(a) | Node::F1(_, a) => uses_x(a),
        Node::Binary(_, a, b) | Node::F2(_, a, b) => uses_x(a) || uses_x(b),
    }
}

fn node(e: &Expr, params: &mut Vec<String>) -> Result<Node, String> {
    Ok(match e {
        Expr::Num(v) => Node::Const(*v),
        Expr::Name { name, .. } if name == "x" => Node::Var(0),
        Expr::Name { name, .. } => {
            let i = match params.iter().position(|p| p == name) {
                Some(i) => i,
                None => {
                    params.push(name.clone());
                    params.len() - 1
                }
            };
            Node::Var(i + 1)
        }
        Expr::Index { name, at, .. } | Expr::IndexBy { name, at, .. } => {
            return Err(format!(
                "at column {at}: '{name}[...]' indexes a collection; a model is a function of x and parameters"
            ));
        }
        Expr::Unary(UnOp::Neg, a) => Node::Neg(Box::new(node(a, params)?)),
        Expr::Unary(UnOp::Not, a) => Node::Not(Box::new(node(a, params)?)),
        Expr::Binary(op, a, b) => {
            Node::Binary(*op, Box::new(node(a, params)?), Box::new(node(b, params)?))
        }
        Expr::Call { func, args, at } => call(func, args, *at, params)?,
    })
}

fn call(func: &str, args: &[Expr], at: usize, params: &mut Vec<String>) -> Result<Node, String> {
    let bare = func.strip_prefix("TMath::").unwrap_or(func);
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!(
                "at column {at}: {func} takes {n} argument(s), got {}",
                args.len()
            ))
        }
    };
    if let Some(v) = constant(func) {
        arity(0)?;
        return Ok(Node::Const(v));
    }
    if let Some((f, _)) = unary_function(func, bare) {
        arity(1)?;
        return Ok(Node::F1(f, Box::new(node(&args[0], params)?)));
    }
    if let Some((f, _)) = binary_function(func, bare) {
        arity(2)?;
        return Ok(Node::F2(
            f,
            Box::new(node(&args[0], params)?),
            Box::new(node(&args[1], params)?),
        ));
    }
    Err(format!(
        "at column {at}: '{func}' is not a function of one number (a model knows abs sqrt exp log log10 pow sin cos tan \
asin acos atan atan2 sinh cosh tanh min max floor ceil hypot and TMath::Pi())"
    ))
}

/// The value at `x` with parameters `p` (NaN where the expression is undefined,
/// e.g. a division by zero gives ±inf or NaN, which the cost turns away). The
/// operators are the cut language's own (`eval::apply`: `%` as TTreeFormula's).
pub fn eval(n: &Node, x: f64, p: &[f64]) -> f64 {
    match n {
        Node::Const(c) => *c,
        Node::Var(0) => x,
        Node::Var(i) => p[i - 1],
        Node::Neg(a) => -eval(a, x, p),
        Node::Not(a) => {
            if truth(eval(a, x, p)) {
                0.0
            } else {
                1.0
            }
        }
        Node::F1(f, a) => f.call(eval(a, x, p)),
        Node::F2(f, a, b) => f(eval(a, x, p), eval(b, x, p)),
        Node::Binary(op, a, b) => apply(*op, eval(a, x, p), eval(b, x, p)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_parameters_in_order() {
        let e = compile("a * exp(-x / t) + b * x").unwrap();
        assert_eq!(e.params, ["a", "t", "b"]);
        let v = eval(&e.root, 2.0, &[3.0, 4.0, 0.5]);
        assert!((v - (3.0 * (-0.5f64).exp() + 1.0)).abs() < 1e-15);
    }

    #[test]
    fn bad_expressions_are_errors_not_panics() {
        assert!(compile("a * ").is_err());
        assert!(compile("a + b").unwrap_err().contains("observable x"));
        assert!(compile("Sum$(x)").is_err());
        assert!(compile("x[0] * a").is_err());
        let e = compile("a / (x - x)").unwrap();
        assert!(!eval(&e.root, 1.0, &[1.0]).is_finite());
    }

    #[test]
    fn operators_are_the_cut_languages() {
        // `%` truncates both operands to integers, as TTreeFormula: 7.9 % 2 = 1
        // (a float remainder would give 1.9); a zero divisor gives NaN.
        let e = compile("x % a").unwrap();
        assert_eq!(eval(&e.root, 7.9, &[2.0]), 1.0);
        assert!(eval(&e.root, 7.9, &[0.5]).is_nan());
        let e = compile("(x > a) && !(x > b)").unwrap();
        assert_eq!(eval(&e.root, 2.0, &[1.0, 3.0]), 1.0);
        assert_eq!(eval(&e.root, 4.0, &[1.0, 3.0]), 0.0);
    }
}
