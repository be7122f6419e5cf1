//! The query language of `search_documents`, as the contextfs spec gives it:
//! space = AND, `|` = OR, `-term` = NOT, `"exact phrase"`, parentheses.
//!
//! `|` binds tighter than the space, as in ugrep's `--bool` queries that the
//! spec's syntax comes from: `attack armor|shield` is attack AND (armor OR
//! shield). A `-` starts a NOT only at the start of a term (`e-mail` is one
//! term). A term or phrase becomes its words (see `tokenizer`), so `e-mail` and
//! `"e mail"` mean the same: those words next to each other on a line.

use super::tokenizer::words;

/// A parsed query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// Words that must follow each other on a line; one word for a plain term.
    Words(Vec<String>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
}

/// Most terms and phrases a query may hold, and how deeply it may nest.
pub const MAX_TERMS: usize = 32;
pub const MAX_DEPTH: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QueryError(pub String);

fn error(why: impl Into<String>) -> QueryError {
    QueryError(why.into())
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Open,
    Close,
    Pipe,
    Not,
    Phrase(String),
    Term(String),
}

/// Parses a query; the error says what is wrong in words a user can act on.
pub fn parse(query: &str) -> Result<Expr, QueryError> {
    let tokens = lex(query)?;
    if tokens.is_empty() {
        return Err(error("the query is empty"));
    }
    let mut parser = Parser {
        tokens,
        at: 0,
        terms: 0,
    };
    let expr = parser.sequence(0)?;
    match parser.tokens.get(parser.at) {
        None => Ok(expr),
        Some(Token::Close) => Err(error("')' without a matching '('")),
        Some(t) => Err(error(format!("unexpected {t:?}"))),
    }
}

fn lex(query: &str) -> Result<Vec<Token>, QueryError> {
    let mut tokens = Vec::new();
    let mut chars = query.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '(' => tokens.push(Token::Open),
            ')' => tokens.push(Token::Close),
            '|' => tokens.push(Token::Pipe),
            '"' => {
                let rest = &query[i + 1..];
                let end = rest
                    .find('"')
                    .ok_or_else(|| error("a '\"' is not closed: phrases go between two quotes"))?;
                tokens.push(Token::Phrase(rest[..end].to_string()));
                // Skip the phrase and its closing quote.
                while chars.next_if(|&(j, _)| j <= i + 1 + end).is_some() {}
            }
            '-' => {
                if chars.peek().is_none_or(|&(_, n)| n.is_whitespace()) {
                    return Err(error(
                        "'-' must be followed by the term to exclude, as in -deprecated",
                    ));
                }
                tokens.push(Token::Not);
            }
            _ => {
                let end = query[i..]
                    .find(|c: char| c.is_whitespace() || "()|\"".contains(c))
                    .map_or(query.len(), |n| i + n);
                tokens.push(Token::Term(query[i..end].to_string()));
                while chars.next_if(|&(j, _)| j < end).is_some() {}
            }
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    terms: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    /// Alternatives side by side, all of which must match (AND), up to the end or
    /// a closing parenthesis.
    fn sequence(&mut self, depth: usize) -> Result<Expr, QueryError> {
        if depth > MAX_DEPTH {
            return Err(error(format!(
                "the query nests more than {MAX_DEPTH} levels deep"
            )));
        }
        let mut all = Vec::new();
        while self.peek().is_some_and(|t| *t != Token::Close) {
            all.push(self.alternatives(depth)?);
        }
        match all.len() {
            0 => Err(error("empty parentheses '()'")),
            1 => Ok(all.pop().expect("one")),
            _ => Ok(Expr::And(all)),
        }
    }

    /// `a|b|c`: any of them.
    fn alternatives(&mut self, depth: usize) -> Result<Expr, QueryError> {
        let mut any = vec![self.unary(depth)?];
        while self.peek() == Some(&Token::Pipe) {
            self.at += 1;
            any.push(self.unary(depth)?);
        }
        Ok(if any.len() == 1 {
            any.pop().expect("one")
        } else {
            Expr::Or(any)
        })
    }

    fn unary(&mut self, depth: usize) -> Result<Expr, QueryError> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        match token {
            Some(Token::Not) => Ok(Expr::Not(Box::new(self.unary(depth + 1)?))),
            Some(Token::Open) => {
                let inner = self.sequence(depth + 1)?;
                if self.peek() != Some(&Token::Close) {
                    return Err(error("a '(' is not closed"));
                }
                self.at += 1;
                Ok(inner)
            }
            Some(Token::Phrase(text)) => self.words(&text, "phrase"),
            Some(Token::Term(text)) => self.words(&text, "term"),
            Some(Token::Pipe) => Err(error("'|' needs a term on each side, as in move|teleport")),
            Some(Token::Close) => Err(error("')' without a matching '('")),
            None => Err(error(
                "the query ends where a term was expected (after '|', '-' or '(')",
            )),
        }
    }

    fn words(&mut self, text: &str, what: &str) -> Result<Expr, QueryError> {
        let w = words(text);
        if w.is_empty() {
            return Err(error(format!(
                "the {what} '{text}' has no letters or digits: documents are searched by words"
            )));
        }
        self.terms += 1;
        if self.terms > MAX_TERMS {
            return Err(error(format!(
                "the query has more than {MAX_TERMS} terms and phrases"
            )));
        }
        Ok(Expr::Words(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(words: &[&str]) -> Expr {
        Expr::Words(words.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn the_spec_examples_parse() {
        assert_eq!(
            parse("attack armor").unwrap(),
            Expr::And(vec![w(&["attack"]), w(&["armor"])])
        );
        assert_eq!(
            parse("move|teleport").unwrap(),
            Expr::Or(vec![w(&["move"]), w(&["teleport"])])
        );
        assert_eq!(
            parse("attack -ranged").unwrap(),
            Expr::And(vec![w(&["attack"]), Expr::Not(Box::new(w(&["ranged"])))])
        );
        assert_eq!(parse("\"end of turn\"").unwrap(), w(&["end", "of", "turn"]));
        assert_eq!(
            parse("(authentication|authorization) security -deprecated").unwrap(),
            Expr::And(vec![
                Expr::Or(vec![w(&["authentication"]), w(&["authorization"])]),
                w(&["security"]),
                Expr::Not(Box::new(w(&["deprecated"]))),
            ])
        );
    }

    #[test]
    fn or_binds_tighter_than_and_and_terms_keep_inner_dashes() {
        assert_eq!(
            parse("attack armor | shield").unwrap(),
            Expr::And(vec![
                w(&["attack"]),
                Expr::Or(vec![w(&["armor"]), w(&["shield"])])
            ])
        );
        assert_eq!(parse("E-Mail").unwrap(), w(&["e", "mail"]));
        assert_eq!(
            parse("-(a|b)").unwrap(),
            Expr::Not(Box::new(Expr::Or(vec![w(&["a"]), w(&["b"])])))
        );
        assert_eq!(
            parse("x\"y z\"").unwrap(),
            Expr::And(vec![w(&["x"]), w(&["y", "z"])])
        );
        assert_eq!(parse("  ((deep))  ").unwrap(), w(&["deep"]));
    }

    #[test]
    fn malformed_queries_say_what_is_wrong() {
        for (q, needle) in [
            ("", "empty"),
            ("   ", "empty"),
            ("(a b", "not closed"),
            ("a b)", "without a matching"),
            ("\"open phrase", "not closed"),
            ("a|", "ends where a term"),
            ("|a", "'|' needs"),
            ("a||b", "'|' needs"),
            ("a - b", "'-' must be followed"),
            ("a -", "'-' must be followed"),
            ("()", "empty parentheses"),
            ("\"\"", "no letters"),
            ("++", "no letters"),
        ] {
            let err = parse(q).unwrap_err().to_string();
            assert!(err.contains(needle), "{q:?}: {err}");
        }
        let many = vec!["t"; MAX_TERMS + 1].join(" ");
        assert!(parse(&many).unwrap_err().0.contains("more than"));
        let deep = format!(
            "{}a{}",
            "(".repeat(MAX_DEPTH + 2),
            ")".repeat(MAX_DEPTH + 2)
        );
        assert!(parse(&deep).unwrap_err().0.contains("nests"));
    }
}
