//! The syntax of `TTree::Draw` cut strings: a hand-written lexer and a
//! precedence-climbing parser into an expression tree. Names are not resolved
//! here (that is `plan`'s job); errors carry the 1-based column of the problem
//! and what was expected there.

use super::AnalysisError;

/// Longest cut string accepted: far beyond any real cut, and it bounds the
/// parser's work and recursion on hostile input.
pub const MAX_LEN: usize = 4096;
/// Deepest nesting of parentheses, calls and unary operators.
const MAX_DEPTH: usize = 64;
/// Deepest expression tree a cut may parse into, chains of operators included
/// (`a + b + c` is two levels deep). Every later pass over the tree (checking,
/// planning, evaluating, bounding) recurses, and a thread's stack is finite: a
/// 2,000-term chain within `MAX_LEN` overflowed it and aborted the daemon. Chains
/// of `&&` and of `||` (run lists) are balanced as they are parsed, so they cost
/// only the logarithm of their length.
pub const MAX_TREE_DEPTH: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

impl BinOp {
    /// The operators that compare two numbers into a truth value.
    pub const COMPARISONS: [BinOp; 6] = [
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
        BinOp::Eq,
        BinOp::Ne,
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

/// A parsed expression; `at` is the 1-based column where a node starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(f64),
    Name {
        name: String,
        at: usize,
    },
    /// `name[i]`: element `i` of each entry of a collection.
    Index {
        name: String,
        index: usize,
        at: usize,
    },
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Call {
        func: String,
        args: Vec<Expr>,
        at: usize,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Ident(String),
    Op(&'static str),
    End,
}

struct Lexed {
    tok: Tok,
    /// 1-based column (in characters) where the token starts.
    at: usize,
}

/// Operators, longest first so that `<=` is not read as `<`.
const OPERATORS: [&str; 19] = [
    "&&", "||", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "!", "(", ")", ",", "[",
    "]",
];

fn lex(text: &str) -> Result<Vec<Lexed>, AnalysisError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let at = i + 1;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let (value, next) = number(&chars, i)?;
            out.push(Lexed {
                tok: Tok::Num(value),
                at,
            });
            i = next;
        } else if c.is_alphabetic() || c == '_' {
            let (name, next) = identifier(&chars, i);
            out.push(Lexed {
                tok: Tok::Ident(name),
                at,
            });
            i = next;
        } else if let Some(op) = OPERATORS.iter().find(|op| {
            op.chars()
                .enumerate()
                .all(|(k, oc)| chars.get(i + k) == Some(&oc))
        }) {
            out.push(Lexed {
                tok: Tok::Op(op),
                at,
            });
            i += op.len();
        } else {
            let expected = match c {
                '&' => "'&&' (a single '&' is not an operator of cuts)",
                '|' => "'||' (a single '|' is not an operator of cuts)",
                '=' => "'==' to compare",
                _ => "a number, a branch name, an operator or a parenthesis",
            };
            return Err(AnalysisError::syntax(at, expected, &format!("'{c}'")));
        }
    }
    out.push(Lexed {
        tok: Tok::End,
        at: chars.len() + 1,
    });
    Ok(out)
}

/// A number: digits, an optional fraction and exponent (`1`, `2.5`, `.5`, `1e-3`).
fn number(chars: &[char], start: usize) -> Result<(f64, usize), AnalysisError> {
    let mut i = start;
    let digits = |i: &mut usize| {
        while chars.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
    };
    digits(&mut i);
    if chars.get(i) == Some(&'.') {
        i += 1;
        digits(&mut i);
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let mut j = i + 1;
        if matches!(chars.get(j), Some('+' | '-')) {
            j += 1;
        }
        if !chars.get(j).is_some_and(char::is_ascii_digit) {
            return Err(AnalysisError::syntax(
                j + 1,
                "the digits of an exponent",
                &found_at(chars, j),
            ));
        }
        i = j;
        digits(&mut i);
    }
    // A C suffix (`1.5f`, `10L`, `3u`) changes nothing in a cut.
    while matches!(chars.get(i), Some('f' | 'F' | 'l' | 'L' | 'u' | 'U')) {
        i += 1;
    }
    if chars
        .get(i)
        .is_some_and(|c| c.is_alphanumeric() || *c == '_')
    {
        return Err(AnalysisError::syntax(
            i + 1,
            "an operator after a number",
            &found_at(chars, i),
        ));
    }
    let text: String = chars[start..i]
        .iter()
        .filter(|c| !matches!(c, 'f' | 'F' | 'l' | 'L' | 'u' | 'U'))
        .collect();
    let value = text
        .parse::<f64>()
        .map_err(|_| AnalysisError::syntax(start + 1, "a number", &format!("'{text}'")))?;
    Ok((value, i))
}

/// A name: letters, digits, `_`, `.` (members of split objects, `branch.leaf`),
/// `::` (`TMath::Abs`) and a trailing `$` (`Length$`).
fn identifier(chars: &[char], start: usize) -> (String, usize) {
    let mut i = start;
    loop {
        match chars.get(i) {
            Some(c) if c.is_alphanumeric() || *c == '_' => i += 1,
            Some('.')
                if chars
                    .get(i + 1)
                    .is_some_and(|c| c.is_alphabetic() || *c == '_') =>
            {
                i += 1
            }
            Some(':') if chars.get(i + 1) == Some(&':') => i += 2,
            Some('$') => {
                i += 1;
                break;
            }
            _ => break,
        }
    }
    (chars[start..i].iter().collect(), i)
}

fn found_at(chars: &[char], i: usize) -> String {
    chars
        .get(i)
        .map_or("the end of the cut".into(), |c| format!("'{c}'"))
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Num(n) => format!("the number {n}"),
        Tok::Ident(s) => format!("'{s}'"),
        Tok::Op(o) => format!("'{o}'"),
        Tok::End => "the end of the cut".into(),
    }
}

/// Whether `name` could start a branch path that goes on with `/more`: the
/// parser joins `evt/I16` into one name when the tree has such a path, since
/// `/` is also division.
pub type PathPrefix<'a> = &'a dyn Fn(&str) -> bool;

struct Parser<'a> {
    toks: Vec<Lexed>,
    pos: usize,
    depth: usize,
    is_path_prefix: PathPrefix<'a>,
}

/// Parses a cut string into an expression tree.
pub fn parse(text: &str, is_path_prefix: PathPrefix<'_>) -> Result<Expr, AnalysisError> {
    if text.chars().count() > MAX_LEN {
        return Err(AnalysisError::syntax(
            MAX_LEN + 1,
            &format!("a cut of at most {MAX_LEN} characters"),
            "a longer cut",
        ));
    }
    let toks = lex(text)?;
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
        is_path_prefix,
    };
    if p.peek() == &Tok::End {
        return Err(AnalysisError::syntax(1, "an expression", "an empty cut"));
    }
    let e = p.binary(0)?;
    p.expect_end()?;
    if tree_depth(&e) > MAX_TREE_DEPTH {
        return Err(AnalysisError::syntax(
            1,
            &format!(
                "a cut at most {MAX_TREE_DEPTH} operators deep (a chain of + - * / or comparisons counts one level per operator)"
            ),
            "a longer chain: split it with parentheses or a define",
        ));
    }
    Ok(e)
}

/// Levels of the deepest path from the root of `e` to a leaf, counted without
/// recursion (the tree may be as deep as the cut is long).
pub fn tree_depth(e: &Expr) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(e, 1)];
    while let Some((node, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        match node {
            Expr::Unary(_, inner) => stack.push((inner, depth + 1)),
            Expr::Binary(_, a, b) => {
                stack.push((a, depth + 1));
                stack.push((b, depth + 1));
            }
            Expr::Call { args, .. } => stack.extend(args.iter().map(|a| (a, depth + 1))),
            Expr::Num(_) | Expr::Name { .. } | Expr::Index { .. } => {}
        }
    }
    deepest
}

/// `terms` joined by `op` as a balanced tree, in their order: for the operators
/// whose grouping cannot change the result (`&&`, `||`), a chain of n terms is
/// log2(n) deep instead of n.
fn balanced(op: BinOp, mut terms: Vec<Expr>) -> Expr {
    if terms.len() == 1 {
        return terms.pop().expect("one term");
    }
    let right = terms.split_off(terms.len() / 2);
    Expr::Binary(
        op,
        Box::new(balanced(op, terms)),
        Box::new(balanced(op, right)),
    )
}

/// Binary operators by precedence level, loosest first (C's order).
const LEVELS: [&[(&str, BinOp)]; 6] = [
    &[("||", BinOp::Or)],
    &[("&&", BinOp::And)],
    &[("==", BinOp::Eq), ("!=", BinOp::Ne)],
    &[
        ("<", BinOp::Lt),
        ("<=", BinOp::Le),
        (">", BinOp::Gt),
        (">=", BinOp::Ge),
    ],
    &[("+", BinOp::Add), ("-", BinOp::Sub)],
    &[("*", BinOp::Mul), ("/", BinOp::Div), ("%", BinOp::Mod)],
];

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }

    fn at(&self) -> usize {
        self.toks[self.pos].at
    }

    fn bump(&mut self) -> &Lexed {
        let t = &self.toks[self.pos];
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn unexpected(&self, expected: &str) -> AnalysisError {
        AnalysisError::syntax(self.at(), expected, &describe(self.peek()))
    }

    fn expect_op(&mut self, op: &str, expected: &str) -> Result<(), AnalysisError> {
        if self.peek()
            == &Tok::Op(
                OPERATORS
                    .iter()
                    .find(|o| **o == op)
                    .expect("known operator"),
            )
        {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn expect_end(&self) -> Result<(), AnalysisError> {
        match self.peek() {
            Tok::End => Ok(()),
            Tok::Op(")") => Err(self.unexpected("an operator (this ')' closes nothing)")),
            _ => Err(self.unexpected("an operator such as && || < + or the end of the cut")),
        }
    }

    fn deeper(&mut self) -> Result<(), AnalysisError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.unexpected(&format!("at most {MAX_DEPTH} levels of nesting")));
        }
        Ok(())
    }

    fn binary(&mut self, level: usize) -> Result<Expr, AnalysisError> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        // A run of the same logical operator is gathered and balanced.
        let mut run: Option<(BinOp, Vec<Expr>)> = None;
        while let Tok::Op(op) = self.peek() {
            let Some(&(_, bin)) = LEVELS[level].iter().find(|(s, _)| s == op) else {
                break;
            };
            self.bump();
            let right = self.binary(level + 1)?;
            if matches!(bin, BinOp::And | BinOp::Or) {
                match &mut run {
                    Some((_, terms)) => terms.push(right),
                    None => {
                        run = Some((
                            bin,
                            vec![std::mem::replace(&mut left, Expr::Num(0.0)), right],
                        ))
                    }
                }
                continue;
            }
            left = Expr::Binary(bin, Box::new(left), Box::new(right));
        }
        Ok(match run {
            Some((op, terms)) => balanced(op, terms),
            None => left,
        })
    }

    fn unary(&mut self) -> Result<Expr, AnalysisError> {
        let op = match self.peek() {
            Tok::Op("-") => Some(UnOp::Neg),
            Tok::Op("!") => Some(UnOp::Not),
            Tok::Op("+") => None,
            _ => return self.primary(),
        };
        self.bump();
        self.deeper()?;
        let inner = self.unary()?;
        self.depth -= 1;
        Ok(match op {
            Some(UnOp::Neg) => match inner {
                Expr::Num(n) => Expr::Num(-n),
                e => Expr::Unary(UnOp::Neg, Box::new(e)),
            },
            Some(op) => Expr::Unary(op, Box::new(inner)),
            None => inner,
        })
    }

    fn primary(&mut self) -> Result<Expr, AnalysisError> {
        let at = self.at();
        match self.peek().clone() {
            Tok::Num(n) => {
                self.bump();
                Ok(Expr::Num(n))
            }
            Tok::Op("(") => {
                self.bump();
                self.deeper()?;
                let e = self.binary(0)?;
                self.depth -= 1;
                self.expect_op(")", "')' to close the '('")?;
                Ok(e)
            }
            Tok::Ident(name) => {
                self.bump();
                match name.as_str() {
                    "true" | "kTRUE" => return Ok(Expr::Num(1.0)),
                    "false" | "kFALSE" => return Ok(Expr::Num(0.0)),
                    _ => {}
                }
                if self.peek() == &Tok::Op("(") {
                    return self.call(name, at);
                }
                let name = self.path_continuation(name);
                if self.peek() == &Tok::Op("[") {
                    return self.index(name, at);
                }
                Ok(Expr::Name { name, at })
            }
            _ => Err(self.unexpected("a number, a branch name, a function or '('")),
        }
    }

    /// Joins `a / b` into the branch path `a/b` when the tree has a path that
    /// starts so (split objects' members are listed as `evt/P3/P3.Px`).
    fn path_continuation(&mut self, mut name: String) -> String {
        while self.peek() == &Tok::Op("/") {
            let Some(Lexed {
                tok: Tok::Ident(next),
                ..
            }) = self.toks.get(self.pos + 1)
            else {
                break;
            };
            let joined = format!("{name}/{next}");
            if !(self.is_path_prefix)(&joined) {
                break;
            }
            name = joined;
            self.bump();
            self.bump();
        }
        name
    }

    fn call(&mut self, func: String, at: usize) -> Result<Expr, AnalysisError> {
        self.bump(); // (
        self.deeper()?;
        let mut args = Vec::new();
        if self.peek() != &Tok::Op(")") {
            loop {
                args.push(self.binary(0)?);
                if self.peek() == &Tok::Op(",") {
                    self.bump();
                } else {
                    break;
                }
            }
        }
        self.depth -= 1;
        self.expect_op(")", &format!("',' or ')' in the arguments of {func}"))?;
        Ok(Expr::Call { func, args, at })
    }

    fn index(&mut self, name: String, at: usize) -> Result<Expr, AnalysisError> {
        self.bump(); // [
        let index = match self.peek() {
            Tok::Num(n) if n.fract() == 0.0 && *n >= 0.0 && *n < u32::MAX as f64 => *n as usize,
            _ => return Err(self.unexpected("a non-negative whole number as the index")),
        };
        self.bump();
        self.expect_op("]", "']' to close the index")?;
        if self.peek() == &Tok::Op("[") {
            return Err(
                self.unexpected("an operator (collections of collections are not indexed twice)")
            );
        }
        Ok(Expr::Index { name, index, at })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Expr, AnalysisError> {
        parse(s, &|n| n.starts_with("evt/"))
    }

    fn name(n: &str, at: usize) -> Box<Expr> {
        Box::new(Expr::Name { name: n.into(), at })
    }

    #[test]
    fn precedence_follows_c() {
        let e = p("a + b * 2 > 3 && !c || d").unwrap();
        let Expr::Binary(BinOp::Or, left, right) = e else {
            panic!()
        };
        assert_eq!(right, name("d", 24));
        let Expr::Binary(BinOp::And, cmp, not) = *left else {
            panic!()
        };
        assert_eq!(*not, Expr::Unary(UnOp::Not, name("c", 19)));
        let Expr::Binary(BinOp::Gt, sum, three) = *cmp else {
            panic!()
        };
        assert_eq!(*three, Expr::Num(3.0));
        assert_eq!(
            *sum,
            Expr::Binary(
                BinOp::Add,
                name("a", 1),
                Box::new(Expr::Binary(
                    BinOp::Mul,
                    name("b", 5),
                    Box::new(Expr::Num(2.0))
                ))
            )
        );
    }

    #[test]
    fn numbers_names_calls_and_indices() {
        assert_eq!(p("1.5e3").unwrap(), Expr::Num(1500.0));
        assert_eq!(p(".5").unwrap(), Expr::Num(0.5));
        assert_eq!(p("-2").unwrap(), Expr::Num(-2.0));
        assert_eq!(p("true").unwrap(), Expr::Num(1.0));
        assert_eq!(p("P3.Px").unwrap(), *name("P3.Px", 1));
        assert_eq!(p("evt/I16").unwrap(), *name("evt/I16", 1));
        // Division stays division when no branch path starts so.
        assert!(matches!(p("a/b").unwrap(), Expr::Binary(BinOp::Div, ..)));
        assert_eq!(
            p("Jet_pt[2]").unwrap(),
            Expr::Index {
                name: "Jet_pt".into(),
                index: 2,
                at: 1
            }
        );
        let Expr::Call { func, args, .. } = p("TMath::Power(x, 2)").unwrap() else {
            panic!()
        };
        assert_eq!((func.as_str(), args.len()), ("TMath::Power", 2));
        let Expr::Call { func, args, .. } = p("Length$(x)").unwrap() else {
            panic!()
        };
        assert_eq!((func.as_str(), args.len()), ("Length$", 1));
        let Expr::Call { args, .. } = p("TMath::Pi()").unwrap() else {
            panic!()
        };
        assert!(args.is_empty());
    }

    #[test]
    fn syntax_errors_name_the_column_and_the_expectation() {
        for (cut, column, expected) in [
            ("", 1, "an expression"),
            ("x >", 4, "a number"),
            ("x & y", 3, "'&&'"),
            ("(x > 1", 7, "')'"),
            ("x > 1)", 6, "closes nothing"),
            ("x = 1", 3, "'=='"),
            ("x[a]", 3, "whole number"),
            ("1e+", 4, "exponent"),
            ("f(1 2)", 5, "',' or ')'"),
            ("x y", 3, "operator"),
            ("x > 1 #", 7, "a number, a branch name"),
        ] {
            let AnalysisError::InvalidSelection {
                column: c,
                expected: e,
                ..
            } = p(cut).unwrap_err()
            else {
                panic!("{cut}")
            };
            assert_eq!(c, column, "{cut}");
            assert!(e.contains(expected), "{cut}: {e}");
        }
    }

    #[test]
    fn hostile_input_is_bounded() {
        assert!(p(&"(".repeat(10_000)).is_err());
        assert!(p(&"!".repeat(1000)).is_err());
        assert!(p(&"x+".repeat(3000)).is_err());
        // A chain is as deep as it is long, and every later pass recurses.
        let long_chain = vec!["x"; 1000].join("+");
        assert!(p(&long_chain).is_err());
        assert!(p(&vec!["x"; MAX_TREE_DEPTH].join("+")).is_ok());
        // Run lists of || (and chains of &&) are balanced: 300 terms, 11 levels,
        // in their order.
        let run_list = (0..300).map(|k| format!("x=={k}")).collect::<Vec<_>>();
        let e = p(&run_list.join(" || ")).unwrap();
        assert_eq!(tree_depth(&e), 11);
        let mut leaves = Vec::new();
        let mut stack = vec![&e];
        while let Some(node) = stack.pop() {
            match node {
                Expr::Binary(BinOp::Or, a, b) => {
                    stack.push(b);
                    stack.push(a);
                }
                Expr::Binary(BinOp::Eq, _, k) => leaves.push((**k).clone()),
                other => panic!("{other:?}"),
            }
        }
        let want: Vec<Expr> = (0..300).map(|k| Expr::Num(k as f64)).collect();
        assert_eq!(leaves, want);
        assert_eq!(tree_depth(&p(&vec!["x"; 600].join(" && ")).unwrap()), 11);
    }
}
