//! The schema: the header envelope (name, description, writer, then lists of
//! field, column, alias column and extra type records) and the footer's
//! schema extension (the same four lists, for fields added while writing).
//! Field and column ids are positions in the header's lists, continued by
//! the extension's.

use super::bytes::{Le, corrupt, plausible};
use crate::FormatError;

/// A field's structural role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Leaf,
    Collection,
    Record,
    Variant,
    /// An object serialized by ROOT's streamer into a byte column.
    Streamer,
    Unknown(u16),
}

impl Role {
    fn from_code(code: u16) -> Role {
        match code {
            0 => Role::Leaf,
            1 => Role::Collection,
            2 => Role::Record,
            3 => Role::Variant,
            4 => Role::Streamer,
            other => Role::Unknown(other),
        }
    }
}

/// Field flags of format 1.0.
pub(super) const FIELD_REPETITIVE: u16 = 0x01;
pub(super) const FIELD_PROJECTED: u16 = 0x02;
pub(super) const FIELD_CHECKSUM: u16 = 0x04;
const FIELD_KNOWN: u16 = FIELD_REPETITIVE | FIELD_PROJECTED | FIELD_CHECKSUM;

/// Column flags of format 1.0.
const COLUMN_DEFERRED: u16 = 0x01;
const COLUMN_RANGE: u16 = 0x02;
const COLUMN_KNOWN: u16 = COLUMN_DEFERRED | COLUMN_RANGE;

/// One field record.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldRecord {
    pub field_version: u32,
    pub type_version: u32,
    /// The parent's id; a top-level field names itself.
    pub parent: usize,
    pub role: Role,
    pub flags: u16,
    pub name: String,
    /// The normalized C++ type (`std::vector<float>`; empty for untyped).
    pub type_name: String,
    pub type_alias: String,
    pub description: String,
    /// Items per entry of a fixed-size array (`std::array`, `std::bitset`).
    pub repetition: u64,
    /// For a projected field, the field it presents.
    pub source: Option<usize>,
    pub checksum: Option<u32>,
}

impl FieldRecord {
    /// Flags this reader does not know (each may change how the field is
    /// stored, so such a field is not read).
    pub fn unknown_flags(&self) -> u16 {
        self.flags & !FIELD_KNOWN
    }
}

/// One physical column record.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnRecord {
    /// The column type code (see `ColumnType`).
    pub type_code: u16,
    pub bits: u16,
    pub field: usize,
    pub flags: u16,
    pub representation: u16,
    /// A deferred column's first element (elements before it read as
    /// zeros); negative for a column deferred and suppressed; 0 otherwise.
    pub first_element: i64,
    /// The range of a quantized column's values.
    pub range: Option<(f64, f64)>,
}

impl ColumnRecord {
    pub fn unknown_flags(&self) -> u16 {
        self.flags & !COLUMN_KNOWN
    }
}

/// What the header and the footer's extension say of fields and columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    pub fields: Vec<FieldRecord>,
    pub columns: Vec<ColumnRecord>,
    /// Alias columns: (physical column, projected field).
    pub aliases: Vec<(usize, usize)>,
}

/// The header's leading records.
pub(super) struct HeaderInfo {
    pub name: String,
    pub description: String,
    pub writer: String,
}

/// Reads the header envelope's payload into `schema`.
pub(super) fn read_header(r: &mut Le<'_>, schema: &mut Schema) -> Result<HeaderInfo, FormatError> {
    refuse_features(&r.feature_flags("header feature flags")?, "header")?;
    let info = HeaderInfo {
        name: r.string("name")?,
        description: r.string("description")?,
        writer: r.string("writer")?,
    };
    read_schema_lists(r, schema)?;
    Ok(info)
}

/// Format 1.0 defines no feature flag: any bit set is a feature this reader
/// does not know and would misread, so the RNTuple is refused.
pub(super) fn refuse_features(words: &[u64], envelope: &str) -> Result<(), FormatError> {
    // The top bit of each word but the last only says another word follows.
    let last = words.len().saturating_sub(1);
    for (i, word) in words.iter().enumerate() {
        let bits = if i < last { word & !(1 << 63) } else { *word };
        if bits != 0 {
            let first = 63 * i as u32 + bits.trailing_zeros();
            return Err(FormatError::Unsupported(format!(
                "RNTuple {envelope} sets feature flag bit {first}, which format 1.0 does not define \
                 (written by a newer ROOT: quarry does not guess at it)"
            )));
        }
    }
    Ok(())
}

/// The four schema lists (fields, columns, alias columns, extra type
/// information), appended to `schema` (ids continue from what it holds).
pub(super) fn read_schema_lists(r: &mut Le<'_>, schema: &mut Schema) -> Result<(), FormatError> {
    let (count, mut items) = r.list_frame("field list")?;
    schema
        .fields
        .reserve(plausible(count, items.remaining(), 8 + 16 + 12));
    for _ in 0..count {
        let mut f = items.record_frame("field record")?;
        schema.fields.push(read_field(&mut f)?);
    }
    let (count, mut items) = r.list_frame("column list")?;
    schema
        .columns
        .reserve(plausible(count, items.remaining(), 8 + 12));
    for _ in 0..count {
        let mut c = items.record_frame("column record")?;
        schema.columns.push(read_column(&mut c)?);
    }
    let (count, mut items) = r.list_frame("alias column list")?;
    for _ in 0..count {
        let mut a = items.record_frame("alias column record")?;
        let physical = a.u32("alias physical column")? as usize;
        let field = a.u32("alias field")? as usize;
        schema.aliases.push((physical, field));
    }
    // Extra type information (the streamer info of streamer fields) is for
    // ROOT's schema evolution; its frames are passed over.
    let (count, mut items) = r.list_frame("extra type information")?;
    for _ in 0..count {
        items.record_frame("extra type information record")?;
    }
    Ok(())
}

fn read_field(f: &mut Le<'_>) -> Result<FieldRecord, FormatError> {
    let field_version = f.u32("field version")?;
    let type_version = f.u32("type version")?;
    let parent = f.u32("parent field id")? as usize;
    let role = Role::from_code(f.u16("structural role")?);
    let flags = f.u16("field flags")?;
    let name = f.string("field name")?;
    let type_name = f.string("field type")?;
    let type_alias = f.string("field type alias")?;
    let description = f.string("field description")?;
    let repetition = if flags & FIELD_REPETITIVE != 0 {
        f.u64("array size")?
    } else {
        0
    };
    let source = if flags & FIELD_PROJECTED != 0 {
        Some(f.u32("projection source")? as usize)
    } else {
        None
    };
    let checksum = if flags & FIELD_CHECKSUM != 0 {
        Some(f.u32("type checksum")?)
    } else {
        None
    };
    Ok(FieldRecord {
        field_version,
        type_version,
        parent,
        role,
        flags,
        name,
        type_name,
        type_alias,
        description,
        repetition,
        source,
        checksum,
    })
}

fn read_column(c: &mut Le<'_>) -> Result<ColumnRecord, FormatError> {
    let type_code = c.u16("column type")?;
    let bits = c.u16("column bits")?;
    let field = c.u32("column field id")? as usize;
    let flags = c.u16("column flags")?;
    let representation = c.u16("column representation")?;
    let first_element = if flags & COLUMN_DEFERRED != 0 {
        c.i64("first element index")?
    } else {
        0
    };
    let range = if flags & COLUMN_RANGE != 0 {
        Some((c.f64("column minimum")?, c.f64("column maximum")?))
    } else {
        None
    };
    Ok(ColumnRecord {
        type_code,
        bits,
        field,
        flags,
        representation,
        first_element,
        range,
    })
}

/// Checks that every id in the schema points inside it.
pub(super) fn check_ids(schema: &Schema) -> Result<(), FormatError> {
    let fields = schema.fields.len();
    for (id, f) in schema.fields.iter().enumerate() {
        if f.parent >= fields || f.source.is_some_and(|s| s >= fields) {
            return Err(corrupt(format!(
                "RNTuple field {id} ('{}') names a field that does not exist",
                f.name
            )));
        }
    }
    if let Some(c) = schema.columns.iter().find(|c| c.field >= fields) {
        return Err(corrupt(format!(
            "RNTuple column of field {}, which does not exist",
            c.field
        )));
    }
    let columns = schema.columns.len();
    if let Some((p, f)) = schema
        .aliases
        .iter()
        .find(|(p, f)| *p >= columns || *f >= fields)
    {
        return Err(corrupt(format!(
            "RNTuple alias column ({p} of field {f}) points outside the schema"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_feature_flags_are_refused() {
        assert!(refuse_features(&[0], "header").is_ok());
        let e = refuse_features(&[1], "header").unwrap_err().to_string();
        assert!(e.contains("bit 0"), "{e}");
        // A continued word: its top bit only says more follow.
        assert!(refuse_features(&[1 << 63, 0], "footer").is_ok());
        let e = refuse_features(&[1 << 63, 4], "footer")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bit 65"), "{e}");
    }
}
