//! Baskets of numbers, one per entry, kept as stored: big-endian, in the
//! buffer they were read or decompressed into, converted to native values a
//! few entries at a time.
//! A scan that works through a basket window by window converts each window
//! into a column that stays in the core's cache, instead of converting the
//! whole basket into a column as large as the basket and reading it back.

use std::ops::Range;

use super::basket::Basket;
use super::column::Column;
use super::reader::ColumnReader;
use super::types::{Layout, LeafType};
use crate::FormatError;

/// A basket of a column of numbers (`ColumnReader::keeps_stored`), as stored.
pub struct StoredBasket {
    basket: Basket,
    /// Bytes per entry.
    item: usize,
}

impl StoredBasket {
    pub fn entries(&self) -> usize {
        self.basket.entries
    }
}

impl ColumnReader<'_> {
    /// Whether this column's baskets can be read as `StoredBasket`s: one
    /// number or fixed array of numbers per entry, back to back. (Entries of
    /// varying length measured no faster so: docs/decisions/0022-engine-reads-windows.md.)
    pub fn keeps_stored(&self) -> bool {
        matches!(self.decoding.leaf_type, LeafType::Prim(_))
            && self.decoding.layout == Layout::Plain
            && !self.decoding.jagged
    }

    /// Reads basket `index` of a column that `keeps_stored` into `into`; the
    /// basket it held goes back to this reader's buffers.
    pub fn read_stored(
        &self,
        index: usize,
        into: &mut Option<StoredBasket>,
    ) -> Result<(), FormatError> {
        let (LeafType::Prim(p), true) = (self.decoding.leaf_type, self.keeps_stored()) else {
            return Err(FormatError::Unsupported(format!(
                "branch '{}' does not hold one number or fixed array per entry",
                self.branch.name
            )));
        };
        if let Some(old) = into.take() {
            self.recycle(old);
        }
        let item = p.size() * self.decoding.inner;
        let basket = self.file.basket(self.branch, index, &self.buffers)?;
        let want = self.ranges.get(index).map(|r| (r.end - r.start) as usize);
        let (entries, bytes) = (basket.entries, basket.data().len());
        if want != Some(entries) || entries.checked_mul(item) != Some(bytes) {
            self.buffers.recycle(basket);
            return Err(FormatError::Corrupt(format!(
                "basket {index} of '{}' holds {bytes} bytes for {entries} entries of {item} \
                 bytes, the branch records {} entries",
                self.branch.name,
                want.unwrap_or(0)
            )));
        }
        *into = Some(StoredBasket { basket, item });
        Ok(())
    }

    /// Entries `entries` of a stored basket, converted into `into` (emptied
    /// first, its buffers reused).
    pub fn convert(&self, stored: &StoredBasket, entries: Range<usize>, into: &mut Column) {
        if into.layout_differs(self.decoding) {
            *into = Column::pooled(self.decoding);
        }
        into.clear();
        let bytes = entries.start * stored.item..entries.end * stored.item;
        into.values.extend_from_be(&stored.basket.data()[bytes]);
        into.entries = entries.len();
    }

    /// Gives a stored basket's buffer back to this reader, for its next reads.
    pub fn recycle(&self, stored: StoredBasket) {
        self.buffers.recycle(stored.basket);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{RootFile, Tree};
    use super::*;

    fn events(name: &str) -> (RootFile, Tree) {
        let path = std::path::Path::new(crate::REPO)
            .join("testdata/root")
            .join(name);
        let file = RootFile::open(std::fs::File::open(path).unwrap()).unwrap();
        let key = file
            .walk()
            .unwrap()
            .into_iter()
            .find(|k| k.key.class_name == "TTree")
            .unwrap()
            .key;
        let tree = file.tree(&key).unwrap();
        (file, tree)
    }

    /// Converts every entry of a stored basket, 7 at a time (windows that
    /// straddle nothing in particular), into one column.
    fn joined(reader: &ColumnReader<'_>, stored: &StoredBasket) -> Column {
        let (mut joined, mut window) = (reader.empty_column(), reader.empty_column());
        for start in (0..stored.entries()).step_by(7) {
            let end = (start + 7).min(stored.entries());
            reader.convert(stored, start..end, &mut window);
            assert_eq!(window.entries, end - start);
            joined.extend_from(&window);
        }
        joined
    }

    /// A stored basket converted a window at a time gives the basket's
    /// decoded values, in every compression; each read recycles the basket
    /// read before.
    #[test]
    fn stored_baskets_convert_to_the_decoded_values() {
        for name in [
            "uproot-HZZ-lz4.root",
            "uproot-HZZ-zlib.root",
            "uproot-HZZ-uncompressed.root",
            "nanoAOD_2015_CMS_Open_Data_ttbar.root",
        ] {
            let (file, tree) = events(name);
            let mut checked = 0;
            let mut stored = None;
            for branch in &tree.branches {
                let Ok(reader) = file.column_reader(branch, None) else {
                    continue;
                };
                if !reader.keeps_stored() {
                    continue;
                }
                let mut whole = reader.empty_column();
                for index in 0..reader.basket_ranges().len() {
                    reader.read_basket(index, &mut whole).unwrap();
                    reader.read_stored(index, &mut stored).unwrap();
                    let column = joined(&reader, stored.as_ref().unwrap());
                    // Compared as printed: NaN, which some branches hold, is
                    // not equal to itself.
                    assert_eq!(
                        format!("{column:?}"),
                        format!("{whole:?}"),
                        "{name} {} basket {index}",
                        branch.name
                    );
                    checked += 1;
                }
            }
            assert!(checked > 10, "{name}: {checked} baskets");
        }
    }

    #[test]
    fn only_numbers_one_per_entry_are_kept_stored() {
        let (file, tree) = events("uproot-HZZ-lz4.root");
        let find = |name: &str| tree.branches.iter().find(|b| b.name == name).unwrap();
        let mut stored = None;
        assert!(
            file.column_reader(find("MET_px"), None)
                .unwrap()
                .keeps_stored()
        );
        let jagged = file.column_reader(find("Muon_Px"), None).unwrap();
        assert!(!jagged.keeps_stored());
        assert!(jagged.read_stored(0, &mut stored).is_err());
        let (file, tree) = events("uproot-small-evnt-tree-fullsplit.root");
        let mut refused = 0;
        let mut stored = None;
        let mut branches: Vec<_> = tree.branches.iter().collect();
        while let Some(branch) = branches.pop() {
            branches.extend(&branch.branches);
            if let Ok(reader) = file.column_reader(branch, None)
                && reader.layout().leaf_type == LeafType::Str
            {
                assert!(!reader.keeps_stored());
                assert!(reader.read_stored(0, &mut stored).is_err());
                refused += 1;
            }
        }
        assert!(refused > 0);
    }
}
