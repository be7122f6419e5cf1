//! Chat sessions (create_chat_session): a dataset, a title and the questions
//! asked in them (answer_question with a session id appends its question). One
//! JSON file per session in the catalog folder's `sessions/`, written beneath
//! it (a temporary file renamed into place), so a session survives restarts
//! and catalog rebuilds, which empty only the database.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// The folder of the catalog folder that holds the sessions.
pub const SESSIONS_DIR: &str = "sessions";
/// Questions one session keeps at most (the oldest are dropped beyond).
pub const MAX_QUESTIONS: usize = 10_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub session_id: String,
    pub dataset_id: String,
    pub title: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    #[serde(default)]
    pub questions: Vec<Question>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub query: String,
    pub asked_at: String,
    /// How it was answered ("extractive" or "abstractive").
    pub answer_mode: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("no session with id '{0}'")]
    NotFound(String),
    #[error("sessions are not stored by this quarry (no catalog folder)")]
    Unavailable,
    #[error("cannot store the session: {0}")]
    Io(#[from] std::io::Error),
}

/// The sessions of one catalog folder.
pub struct Sessions {
    /// The catalog folder; `None` keeps no sessions.
    dir: Option<PathBuf>,
    /// Read-modify-write of a session file happens under this lock.
    lock: Mutex<()>,
    counter: AtomicU64,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Whether `id` has the shape this module gives ids (so it names a file of the
/// sessions folder and nothing else).
pub fn valid_id(id: &str) -> bool {
    id.strip_prefix("sess_")
        .is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

impl Sessions {
    pub fn new(catalog_dir: Option<PathBuf>) -> Sessions {
        Sessions {
            dir: catalog_dir,
            lock: Mutex::new(()),
            counter: AtomicU64::new(0),
        }
    }

    fn new_id(&self) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut seed = [0u8; 20];
        seed[..8].copy_from_slice(&nanos.to_le_bytes());
        seed[8..16].copy_from_slice(&n.to_le_bytes());
        seed[16..].copy_from_slice(&std::process::id().to_le_bytes());
        format!("sess_{:016x}", xxhash_rust::xxh64::xxh64(&seed, 0x5E55))
    }

    fn write(&self, s: &Session) -> Result<(), SessionError> {
        let dir = self.dir.as_ref().ok_or(SessionError::Unavailable)?;
        let bytes = serde_json::to_vec_pretty(s).map_err(std::io::Error::other)?;
        crate::roots::create_beneath(dir, SESSIONS_DIR, &format!("{}.json", s.session_id), &bytes)?;
        Ok(())
    }

    /// Creates and stores a session.
    pub fn create(&self, dataset_id: &str, title: &str) -> Result<Session, SessionError> {
        let _guard = self.lock.lock().expect("sessions lock");
        let session = Session {
            session_id: self.new_id(),
            dataset_id: dataset_id.to_string(),
            title: title.to_string(),
            created_at: now(),
            questions: Vec::new(),
        };
        self.write(&session)?;
        Ok(session)
    }

    fn read(&self, id: &str) -> Result<Session, SessionError> {
        let dir = self.dir.as_ref().ok_or(SessionError::Unavailable)?;
        if !valid_id(id) {
            return Err(SessionError::NotFound(id.to_string()));
        }
        let path = dir.join(SESSIONS_DIR).join(format!("{id}.json"));
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SessionError::NotFound(id.to_string()));
            }
            Err(e) => return Err(e.into()),
        };
        serde_json::from_slice(&bytes).map_err(|e| SessionError::Io(std::io::Error::other(e)))
    }

    /// The stored session `id`.
    pub fn get(&self, id: &str) -> Result<Session, SessionError> {
        let _guard = self.lock.lock().expect("sessions lock");
        self.read(id)
    }

    /// Appends a question to session `id`.
    pub fn record(&self, id: &str, query: &str, answer_mode: &str) -> Result<usize, SessionError> {
        let _guard = self.lock.lock().expect("sessions lock");
        let mut s = self.read(id)?;
        s.questions.push(Question {
            query: query.to_string(),
            asked_at: now(),
            answer_mode: answer_mode.to_string(),
        });
        if s.questions.len() > MAX_QUESTIONS {
            let excess = s.questions.len() - MAX_QUESTIONS;
            s.questions.drain(..excess);
        }
        self.write(&s)?;
        Ok(s.questions.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_stored_and_questions_appended() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        let sessions = Sessions::new(Some(dir.clone()));
        let a = sessions.create("data", "First").unwrap();
        let b = sessions.create("data", "Second").unwrap();
        assert_ne!(a.session_id, b.session_id);
        assert!(valid_id(&a.session_id), "{}", a.session_id);
        assert_eq!(
            sessions
                .record(&a.session_id, "why?", "extractive")
                .unwrap(),
            1
        );
        assert_eq!(
            sessions
                .record(&a.session_id, "how?", "extractive")
                .unwrap(),
            2
        );
        // A fresh store over the same folder reads what the first wrote.
        let again = Sessions::new(Some(dir.clone())).get(&a.session_id).unwrap();
        let queries: Vec<&str> = again.questions.iter().map(|q| q.query.as_str()).collect();
        assert_eq!(queries, ["why?", "how?"]);
        assert_eq!(
            (again.dataset_id.as_str(), again.title.as_str()),
            ("data", "First")
        );
        assert!(matches!(
            sessions.get("sess_0000000000000000"),
            Err(SessionError::NotFound(_))
        ));
        assert!(matches!(
            sessions.get("../../etc/passwd"),
            Err(SessionError::NotFound(_))
        ));
        assert!(matches!(
            Sessions::new(None).create("data", "x"),
            Err(SessionError::Unavailable)
        ));
    }
}
