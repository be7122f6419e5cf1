//! The optional LLM (`[llm]`): an OpenAI-compatible chat-completions endpoint
//! (Ollama, llama.cpp's server, vLLM, hosted services) that makes answers and
//! summaries abstractive. A call runs on its own thread with a time limit, and
//! the caller stops waiting as soon as its `Job` is cancelled or out of time;
//! every failure is an `LlmError` the caller turns into an extractive answer
//! with a note, never a failed call.

use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::job::{Job, Stop};

/// Longest a request waits by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest reply body read.
const MAX_REPLY_BYTES: u64 = 4 << 20;
/// How often a waiting caller looks at its `Job`.
const POLL: Duration = Duration::from_millis(25);

/// The `[llm]` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmConfig {
    /// The API's base, e.g. `http://localhost:11434/v1`; requests go to
    /// `{base_url}/chat/completions`.
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the API key (sent as a bearer token).
    pub api_key_env: Option<String>,
    pub timeout: Duration,
    /// Most tokens the model writes per answer.
    pub max_tokens: u32,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LlmError {
    #[error("the LLM did not answer within {0:.1} s")]
    TimedOut(f64),
    #[error("the call was cancelled")]
    Cancelled,
    #[error("the API key variable {0} is not set")]
    NoKey(String),
    #[error("cannot reach the LLM: {0}")]
    Transport(String),
    #[error("the LLM answered HTTP {0}: {1}")]
    Status(u16, String),
    #[error("the LLM's reply has no message: {0}")]
    BadReply(String),
}

/// A message of a chat.
pub struct Prompt {
    pub system: String,
    pub user: String,
}

impl LlmConfig {
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }

    /// The request body sent for a prompt.
    pub fn body(&self, prompt: &Prompt, temperature: f64) -> Value {
        json!({
            "model": self.model,
            "messages": [
                { "role": "system", "content": prompt.system },
                { "role": "user", "content": prompt.user },
            ],
            "temperature": temperature,
            "max_tokens": self.max_tokens,
            "stream": false,
        })
    }

    /// Asks the model; the reply's text. Waits at most the configured timeout
    /// or the job's remaining time, whichever is shorter, and returns at once
    /// when the job is cancelled (the request thread ends by its own timeout).
    pub fn complete(
        &self,
        prompt: &Prompt,
        temperature: f64,
        job: &Job,
    ) -> Result<String, LlmError> {
        let key = match &self.api_key_env {
            Some(var) => match std::env::var(var) {
                Ok(k) if !k.is_empty() => Some(k),
                _ => return Err(LlmError::NoKey(var.clone())),
            },
            None => None,
        };
        let limit = job
            .remaining()
            .map_or(self.timeout, |r| r.min(self.timeout));
        if limit.is_zero() {
            return Err(LlmError::TimedOut(0.0));
        }
        let body = self.body(prompt, temperature);
        let url = self.endpoint();
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("quarry-llm".into())
            .spawn(move || {
                let outcome =
                    std::panic::catch_unwind(|| request(&url, key.as_deref(), &body, limit));
                let outcome = outcome
                    .unwrap_or_else(|p| Err(LlmError::Transport(crate::panics::panic_message(&p))));
                let _ = tx.send(outcome);
            })
            .map_err(|e| LlmError::Transport(e.to_string()))?;
        loop {
            match rx.recv_timeout(POLL) {
                Ok(outcome) => return outcome,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(LlmError::Transport("the request thread ended".into()));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => match job.stopped() {
                    Some(Stop::Cancelled) => return Err(LlmError::Cancelled),
                    Some(Stop::TimedOut) => {
                        return Err(LlmError::TimedOut(limit.as_secs_f64()));
                    }
                    None => {}
                },
            }
        }
    }
}

fn request(
    url: &str,
    key: Option<&str>,
    body: &Value,
    limit: Duration,
) -> Result<String, LlmError> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(limit))
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.post(url).header("Accept", "application/json");
    if let Some(key) = key {
        request = request.header("Authorization", &format!("Bearer {key}"));
    }
    let mut reply = request.send_json(body).map_err(|e| match e {
        ureq::Error::Timeout(_) => LlmError::TimedOut(limit.as_secs_f64()),
        e => LlmError::Transport(e.to_string()),
    })?;
    let status = reply.status().as_u16();
    let text = reply
        .body_mut()
        .with_config()
        .limit(MAX_REPLY_BYTES)
        .read_to_string()
        .map_err(|e| match e {
            ureq::Error::Timeout(_) => LlmError::TimedOut(limit.as_secs_f64()),
            e => LlmError::Transport(e.to_string()),
        })?;
    if !(200..300).contains(&status) {
        return Err(LlmError::Status(status, clip(&text, 300)));
    }
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| LlmError::BadReply(format!("{e}: {}", clip(&text, 200))))?;
    value["choices"][0]["message"]["content"]
        .as_str()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| LlmError::BadReply(clip(&text, 200)))
}

fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A numbered source the model may quote.
pub struct Source<'a> {
    pub label: String,
    pub text: &'a str,
}

fn numbered(sources: &[Source]) -> String {
    sources
        .iter()
        .enumerate()
        .map(|(i, s)| format!("[{}] ({}) {}", i + 1, s.label, s.text))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The prompt that answers `question` from `sources`.
pub fn answer_prompt(question: &str, sources: &[Source]) -> Prompt {
    Prompt {
        system: "You answer questions using only the numbered sources you are given. Quote the sources' \
own words in double quotes for every fact you state and cite each as [n]. If the sources do not \
answer the question, say so; never add facts they do not contain."
            .into(),
        user: format!("Question: {question}\n\nSources:\n\n{}", numbered(sources)),
    }
}

/// The prompt that summarises `sources`.
pub fn summary_prompt(sources: &[Source]) -> Prompt {
    Prompt {
        system:
            "You summarise the numbered passages you are given in about 100 words, using only what \
they say. Quote their own words in double quotes for key facts and cite each as [n]."
                .into(),
        user: format!("Passages:\n\n{}", numbered(sources)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(base: &str) -> LlmConfig {
        LlmConfig {
            base_url: base.into(),
            model: "m".into(),
            api_key_env: None,
            timeout: Duration::from_secs(5),
            max_tokens: 300,
        }
    }

    #[test]
    fn endpoint_and_body() {
        let c = config("http://localhost:11434/v1/");
        assert_eq!(c.endpoint(), "http://localhost:11434/v1/chat/completions");
        let p = answer_prompt(
            "why?",
            &[Source {
                label: "a.md p.1 l.3".into(),
                text: "Because.",
            }],
        );
        let b = c.body(&p, 0.25);
        assert_eq!(b["model"], "m");
        assert_eq!(b["temperature"], 0.25);
        assert!(
            b["messages"][1]["content"]
                .as_str()
                .unwrap()
                .contains("[1] (a.md p.1 l.3) Because.")
        );
    }

    #[test]
    fn a_missing_key_and_an_unreachable_server_are_errors() {
        let mut c = config("http://127.0.0.1:9");
        c.api_key_env = Some("QUARRY_SURELY_UNSET_KEY".into());
        let p = summary_prompt(&[]);
        assert_eq!(
            c.complete(&p, 0.7, &Job::default()),
            Err(LlmError::NoKey("QUARRY_SURELY_UNSET_KEY".into()))
        );
        c.api_key_env = None;
        assert!(matches!(
            c.complete(&p, 0.7, &Job::default()),
            Err(LlmError::Transport(_))
        ));
        let job = Job::default();
        job.cancel();
        // A cancelled job still gets the (immediate) connection error or Cancelled.
        assert!(c.complete(&p, 0.7, &job).is_err());
    }
}
