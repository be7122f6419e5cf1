//! ROOT's streamed-object framing: byte counts and versions, TObject and TNamed,
//! TObjArray, and object references (`ReadObjectAny`), in which a class or object
//! written earlier in the same record is referred to by its position.

use std::collections::HashMap;

use super::cursor::Cursor;
use crate::FormatError;

const BYTE_COUNT_MASK: u32 = 0x4000_0000;
const NEW_CLASS_TAG: u32 = 0xFFFF_FFFF;
const CLASS_MASK: u32 = 0x8000_0000;
/// References count positions from two bytes before the object (ROOT's kMapOffset).
const MAP_OFFSET: u32 = 2;
const VERSION_HAS_BYTE_COUNT: u16 = 0x4000;
const IS_REFERENCED: u32 = 1 << 4;

/// A streamed object's version and, when it carries a byte count, where it ends.
#[derive(Debug, Clone, Copy)]
pub struct Framing {
    pub version: i16,
    pub end: Option<usize>,
}

impl Framing {
    pub fn read(c: &mut Cursor<'_>, what: &str) -> Result<Framing, FormatError> {
        let start = c.pos();
        let count = c.u32(what)?;
        if count & BYTE_COUNT_MASK == 0 {
            c.set_pos(start, what)?;
            return Ok(Framing {
                version: c.i16(what)?,
                end: None,
            });
        }
        let end = start + 4 + (count & !BYTE_COUNT_MASK) as usize;
        let version = c.i16(what)?;
        if end > start + 4 + c.remaining() + 2 {
            return Err(FormatError::Corrupt(format!(
                "{what} claims more bytes than its record holds"
            )));
        }
        Ok(Framing {
            version,
            end: Some(end),
        })
    }

    /// Moves past the object (members not read are skipped by the byte count).
    pub fn finish(self, c: &mut Cursor<'_>, what: &str) -> Result<(), FormatError> {
        match self.end {
            Some(end) => c.set_pos(end, what),
            None => Ok(()),
        }
    }

    /// Skips an object of no interest; one without a byte count cannot be skipped.
    pub fn skip(c: &mut Cursor<'_>, what: &str) -> Result<(), FormatError> {
        let f = Framing::read(c, what)?;
        if f.end.is_none() {
            return Err(FormatError::Unsupported(format!(
                "{what} without a byte count"
            )));
        }
        f.finish(c, what)
    }
}

pub fn read_tobject(c: &mut Cursor<'_>) -> Result<(), FormatError> {
    let version = c.u16("TObject version")?;
    if version & VERSION_HAS_BYTE_COUNT != 0 {
        c.skip(4, "TObject byte count")?;
    }
    c.u32("TObject unique id")?;
    let bits = c.u32("TObject bits")?;
    if bits & IS_REFERENCED != 0 {
        c.skip(2, "TObject process id")?;
    }
    Ok(())
}

/// Reads a TNamed; returns (name, title).
pub fn read_tnamed(c: &mut Cursor<'_>) -> Result<(String, String), FormatError> {
    let f = Framing::read(c, "TNamed")?;
    read_tobject(c)?;
    let name = c.tstring("name")?;
    let title = c.tstring("title")?;
    f.finish(c, "TNamed")?;
    Ok((name, title))
}

/// What an object reference resolves to, as far as quarry needs to remember it.
#[derive(Debug, Clone)]
pub enum Referent<L> {
    Leaf(L),
    Branch(String),
    /// Any other object, e.g. a basket.
    Other,
}

/// Builds an object given its class name and, when known, where it ends.
pub type ReadObject<'f, T, L> =
    dyn FnMut(&mut Cursor<'_>, &mut Refs<L>, &str, Option<usize>) -> Result<T, FormatError> + 'f;

/// Classes and objects already read in one record, by their reference positions.
pub struct Refs<L> {
    /// Length of the key header that precedes the record: positions count from it.
    base: u32,
    classes: HashMap<u32, String>,
    objects: HashMap<u32, Referent<L>>,
}

impl<L: Clone> Refs<L> {
    pub fn new(key_len: u16) -> Refs<L> {
        Refs {
            base: u32::from(key_len),
            classes: HashMap::new(),
            objects: HashMap::new(),
        }
    }

    fn position(&self, local: usize) -> u32 {
        (local as u32)
            .wrapping_add(self.base)
            .wrapping_add(MAP_OFFSET)
    }
}

/// One element read by `read_object_any`.
pub enum AnyObject<T, L> {
    Null,
    /// A reference to an object read earlier in the record.
    Earlier(Referent<L>),
    New(T),
}

/// Reads a pointer-to-object member: null, a reference to an earlier object, or a
/// new object of a class named inline or referred to. `read` builds the object
/// given its class name and, when known, where it ends; `remember` says what to
/// keep of it for later references.
pub fn read_object_any<T, L: Clone>(
    c: &mut Cursor<'_>,
    refs: &mut Refs<L>,
    read: &mut ReadObject<'_, T, L>,
    remember: &dyn Fn(&T, &str) -> Referent<L>,
) -> Result<AnyObject<T, L>, FormatError> {
    let beg = c.pos();
    let first = c.u32("object reference")?;
    let (tag, count) = if first & BYTE_COUNT_MASK == 0 || first == NEW_CLASS_TAG {
        (first, None)
    } else {
        (c.u32("object tag")?, Some(first & !BYTE_COUNT_MASK))
    };
    let end = count.map(|n| beg + 4 + n as usize);
    if tag & CLASS_MASK == 0 {
        if tag == 0 {
            return Ok(AnyObject::Null);
        }
        return match refs.objects.get(&tag) {
            Some(r) => Ok(AnyObject::Earlier(r.clone())),
            None => {
                // ROOT itself skips a reference it cannot resolve.
                if let Some(end) = end {
                    c.set_pos(end, "object reference")?;
                }
                Ok(AnyObject::Null)
            }
        };
    }
    let class = if tag == NEW_CLASS_TAG {
        let name = c.cstring("class name")?;
        let at = match count {
            Some(_) => refs.position(beg + 4),
            None => refs.classes.len() as u32 + refs.objects.len() as u32 + 1,
        };
        refs.classes.insert(at, name.clone());
        name
    } else {
        let at = tag & !CLASS_MASK;
        refs.classes.get(&at).cloned().ok_or_else(|| {
            FormatError::Corrupt(format!("reference to an unknown class (position {at})"))
        })?
    };
    let object = read(c, refs, &class, end)?;
    let at = match count {
        Some(_) => refs.position(beg),
        None => refs.classes.len() as u32 + refs.objects.len() as u32 + 1,
    };
    refs.objects.insert(at, remember(&object, &class));
    Ok(AnyObject::New(object))
}

/// Reads a TObjArray, each element through `read_object_any`.
pub fn read_tobjarray<T, L: Clone>(
    c: &mut Cursor<'_>,
    refs: &mut Refs<L>,
    read: &mut ReadObject<'_, T, L>,
    remember: &dyn Fn(&T, &str) -> Referent<L>,
) -> Result<Vec<AnyObject<T, L>>, FormatError> {
    let f = Framing::read(c, "TObjArray")?;
    read_tobject(c)?;
    c.tstring("TObjArray name")?;
    let size = c.i32("TObjArray size")?;
    c.i32("TObjArray lower bound")?;
    let size = usize::try_from(size)
        .map_err(|_| FormatError::Corrupt(format!("TObjArray of {size} elements")))?;
    c.fits(size, 4, "TObjArray elements")?;
    let mut out = Vec::with_capacity(size);
    for _ in 0..size {
        out.push(read_object_any(c, refs, read, remember)?);
    }
    f.finish(c, "TObjArray")?;
    Ok(out)
}
