//! Saved ROOT datasets (`define_dataset`, `list_root_datasets`): a name for a
//! set of files read as one, with its tree. A definition is the user's, not
//! something found in the roots, so unlike every other table this one is kept
//! when the catalog is emptied (a schema change, `rebuild`), as the chat
//! sessions are. Only the definition is stored: a glob's files are matched
//! against the file list at each use, so the files the watcher adds or removes
//! join or leave the dataset as soon as they are indexed.

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};

use super::{Catalog, decode, encode};

pub(super) const DATASETS: TableDefinition<&str, &[u8]> = TableDefinition::new("root_datasets");
pub(super) const DATASETS_NAME: &str = "root_datasets";

/// The first byte of every stored definition: the encoding that follows. A
/// definition of another version is reported as unreadable, never guessed.
const FORMAT: u8 = 1;

/// Which files a dataset holds, as the user gave them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DatasetFiles {
    /// A glob over indexed files (as `list_files`' pattern), matched at each use.
    Glob(String),
    /// Tool paths, each one file.
    List(Vec<String>),
}

/// A saved dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedDataset {
    pub name: String,
    pub files: DatasetFiles,
    pub tree: String,
    pub description: Option<String>,
    /// Names for expressions (`define`), in the order given; kept with the
    /// dataset and handed to each call that uses it.
    pub define: Vec<(String, String)>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

fn encoded(d: &SavedDataset) -> Vec<u8> {
    let mut out = vec![FORMAT];
    out.extend(encode(d));
    out
}

fn decoded(bytes: &[u8]) -> anyhow::Result<SavedDataset> {
    match bytes.split_first() {
        Some((&FORMAT, rest)) => decode(rest),
        Some((v, _)) => {
            anyhow::bail!("a dataset definition of format {v} (this quarry reads {FORMAT})")
        }
        None => anyhow::bail!("an empty dataset definition"),
    }
}

impl Catalog {
    /// Stores a definition under its name, replacing one of the same name;
    /// returns the one replaced.
    pub fn save_dataset(&self, d: &SavedDataset) -> anyhow::Result<Option<SavedDataset>> {
        let txn = self.db.begin_write()?;
        let before = {
            let mut table = txn.open_table(DATASETS)?;
            let before = table.insert(d.name.as_str(), encoded(d).as_slice())?;
            before
                .map(|v| decoded(v.value()))
                .transpose()
                .ok()
                .flatten()
        };
        txn.commit()?;
        Ok(before)
    }

    /// The definition saved under `name`.
    pub fn dataset(&self, name: &str) -> anyhow::Result<Option<SavedDataset>> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(DATASETS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        table.get(name)?.map(|v| decoded(v.value())).transpose()
    }

    /// Every saved definition in name order, each decoded or the reason it
    /// cannot be (with its name).
    pub fn datasets(&self) -> anyhow::Result<Vec<(String, anyhow::Result<SavedDataset>)>> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(DATASETS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut out = Vec::new();
        for item in table.iter()? {
            let (k, v) = item?;
            out.push((k.value().to_string(), decoded(v.value())));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roots::Roots;

    fn saved(name: &str, files: DatasetFiles) -> SavedDataset {
        SavedDataset {
            name: name.into(),
            files,
            tree: "events".into(),
            description: Some("test".into()),
            define: vec![("pt2".into(), "pt*pt".into())],
            created_ms: 1,
            updated_ms: 2,
        }
    }

    /// Definitions are kept by name, replaced by a second save, and survive
    /// a schema change and a reset, which empty every other table.
    #[test]
    fn definitions_outlive_the_cache() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let roots = Roots::new(vec![("data".into(), data)]).unwrap();
        let dir = tmp.path().join("catalog");
        let cat = Catalog::open(&dir, &roots).unwrap();
        let a = saved("a", DatasetFiles::Glob("run/**/*.root".into()));
        assert_eq!(cat.save_dataset(&a).unwrap(), None);
        let b = saved("b", DatasetFiles::List(vec!["x.root".into()]));
        cat.save_dataset(&b).unwrap();
        let a2 = saved("a", DatasetFiles::List(vec!["y.root".into()]));
        assert_eq!(cat.save_dataset(&a2).unwrap(), Some(a));
        assert_eq!(cat.dataset("a").unwrap(), Some(a2.clone()));
        assert_eq!(cat.dataset("zz").unwrap(), None);
        cat.reset().unwrap();
        let names: Vec<String> = cat.datasets().unwrap().into_iter().map(|d| d.0).collect();
        assert_eq!(names, ["a", "b"]);
        // Another schema version: the tables are recreated, the definitions kept.
        let txn = cat.db.begin_write().unwrap();
        txn.open_table(super::super::META)
            .unwrap()
            .insert(
                super::super::META_SCHEMA_VERSION,
                999u32.to_le_bytes().as_slice(),
            )
            .unwrap();
        txn.commit().unwrap();
        drop(cat);
        let cat = Catalog::open(&dir, &roots).unwrap();
        assert_eq!(cat.dataset("a").unwrap(), Some(a2));
        assert_eq!(cat.dataset("b").unwrap(), Some(b));
    }
}
