//! Paths the indexer found but could not index: unreadable folders, names that are
//! not UTF-8, paths too long for tools. They have no kind and no file id, so they
//! live in a table of their own, keyed like `files`, and each sync replaces the
//! ones below the folder it looked at.

use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use super::Catalog;
use crate::roots::RootId;

/// (root name, relative path as displayed) → the reason, UTF-8.
pub(super) const SKIPPED: TableDefinition<(&str, &str), &str> = TableDefinition::new("skipped");

/// Whether `rel` is `under` or below it (`""` is the whole root).
fn is_below(rel: &str, under: &str) -> bool {
    under.is_empty()
        || rel == under
        || (rel.starts_with(under) && rel.as_bytes().get(under.len()) == Some(&b'/'))
}

impl Catalog {
    /// Replaces the skipped paths recorded at or below `under` with `found`
    /// ((relative path, reason) pairs), in one transaction.
    pub fn replace_skipped(
        &self,
        root_id: RootId,
        under: &str,
        found: &[(String, String)],
    ) -> anyhow::Result<()> {
        let name = self.roots.list()[root_id].name.as_str();
        let txn = self.db.begin_write()?;
        {
            let mut table = txn.open_table(SKIPPED)?;
            let mut stale = Vec::new();
            for item in table.range((name, under)..)? {
                let (key, _) = item?;
                let (r, rel) = key.value();
                if r != name || !(rel.starts_with(under)) {
                    break;
                }
                if is_below(rel, under) {
                    stale.push(rel.to_string());
                }
            }
            if stale.is_empty() && found.is_empty() {
                return Ok(());
            }
            for rel in &stale {
                table.remove((name, rel.as_str()))?;
            }
            for (rel, reason) in found {
                table.insert((name, rel.as_str()), reason.as_str())?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    /// How many paths of a root were skipped, and the first `limit` of them.
    pub fn skipped(
        &self,
        root_id: RootId,
        limit: usize,
    ) -> anyhow::Result<(usize, Vec<(String, String)>)> {
        let name = self.roots.list()[root_id].name.as_str();
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(SKIPPED) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok((0, Vec::new())),
            Err(e) => return Err(e.into()),
        };
        let (mut total, mut listed) = (0, Vec::new());
        for item in table.range((name, "")..)? {
            let (key, reason) = item?;
            let (r, rel) = key.value();
            if r != name {
                break;
            }
            total += 1;
            if listed.len() < limit {
                listed.push((rel.to_string(), reason.value().to_string()));
            }
        }
        Ok((total, listed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_means_the_folder_itself_or_inside_it() {
        assert!(is_below("a/b", ""));
        assert!(is_below("a", "a"));
        assert!(is_below("a/b", "a"));
        assert!(!is_below("ab", "a"));
        assert!(!is_below("b/a", "a"));
    }
}
