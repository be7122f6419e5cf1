//! The streamer info: the file's own description of the classes whose objects it
//! stores (a TList of TStreamerInfo, one per class and version, each listing the
//! class's members as TStreamerElements). quarry needs it for one thing: the C++
//! type of a member of a split object that the branch alone does not tell, such as
//! `vector<short>` or `string` (a branch of such a member says only "STL").

use std::collections::HashMap;

use super::cursor::Cursor;
use super::object::{
    AnyObject, Framing, Referent, Refs, read_object_any, read_tnamed, read_tobjarray, read_tobject,
};
use crate::FormatError;

/// One member of a class, as its streamer element describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    /// TStreamerBasicType, TStreamerSTL, TStreamerString...
    pub element_class: String,
    /// ROOT's type code (EDataType below 100, 300/500 for STL containers, 65 for
    /// TString...).
    pub type_code: i32,
    /// The C++ type as written in the class (`vector<float>`, `unsigned int`).
    pub type_name: String,
}

/// One class version's layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassInfo {
    pub class_name: String,
    pub version: i32,
    pub members: Vec<Member>,
}

/// Every class layout a file describes, by class name (all versions).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Streamers {
    classes: HashMap<String, Vec<ClassInfo>>,
}

impl Streamers {
    /// How many classes the record describes (each with one or more versions).
    pub fn class_count(&self) -> usize {
        self.classes.len()
    }

    /// The member `name` of `class`: the element at position `id` when its name
    /// matches (the branch's own pointer into the layout), else the member of that
    /// name in the newest layout that has one.
    pub fn member(&self, class: &str, id: i32, name: &str) -> Option<&Member> {
        let versions = self.classes.get(class)?;
        let by_id = usize::try_from(id).ok().and_then(|i| {
            versions
                .iter()
                .filter_map(|v| v.members.get(i))
                .find(|m| m.name == name)
        });
        by_id.or_else(|| {
            versions
                .iter()
                .rev()
                .find_map(|v| v.members.iter().find(|m| m.name == name))
        })
    }
}

enum Part {
    Info(ClassInfo),
    Member(Member),
    Other,
}

fn remember(_: &Part, _: &str) -> Referent<()> {
    Referent::Other
}

/// Reads the streamer info record (the object of the key at the header's
/// `fSeekInfo`, uncompressed). Objects other than TStreamerInfo (ROOT also keeps
/// schema rules there) are skipped by their byte counts.
pub fn read_streamers(bytes: &[u8], key_len: u16, origin: u64) -> Result<Streamers, FormatError> {
    let c = &mut Cursor::new(bytes, origin);
    let refs = &mut Refs::<()>::new(key_len);
    let list = Framing::read(c, "TList")?;
    read_tobject(c)?;
    c.tstring("TList name")?;
    let n = c.i32("TList size")?;
    let n =
        usize::try_from(n).map_err(|_| FormatError::Corrupt(format!("TList of {n} objects")))?;
    c.fits(n, 5, "TList objects")?;
    let mut streamers = Streamers::default();
    for _ in 0..n {
        if let AnyObject::New(Part::Info(info)) =
            read_object_any(c, refs, &mut read_part, &remember)?
        {
            streamers
                .classes
                .entry(info.class_name.clone())
                .or_default()
                .push(info);
        }
        let option_len = c.u8("TList option")?;
        c.skip(usize::from(option_len), "TList option")?;
    }
    list.finish(c, "TList")?;
    Ok(streamers)
}

fn read_part(
    c: &mut Cursor<'_>,
    refs: &mut Refs<()>,
    class: &str,
    end: Option<usize>,
) -> Result<Part, FormatError> {
    match class {
        "TStreamerInfo" => read_info(c, refs).map(Part::Info),
        _ if class.starts_with("TStreamer") => read_member(c, class).map(Part::Member),
        _ => {
            let Some(end) = end else {
                return Err(FormatError::Unsupported(format!(
                    "a {class} without a byte count in the streamer info"
                )));
            };
            c.set_pos(end, class)?;
            Ok(Part::Other)
        }
    }
}

fn read_info(c: &mut Cursor<'_>, refs: &mut Refs<()>) -> Result<ClassInfo, FormatError> {
    let f = Framing::read(c, "TStreamerInfo")?;
    let (class_name, _title) = read_tnamed(c)?;
    c.u32("fCheckSum")?;
    let version = c.i32("fClassVersion")?;
    let members = match read_object_any(
        c,
        refs,
        &mut |c, refs, class, end| {
            if class != "TObjArray" {
                return Err(FormatError::Corrupt(format!(
                    "a class layout's elements are a {class}"
                )));
            }
            let _ = end;
            read_tobjarray(c, refs, &mut read_part, &remember)
        },
        &|_, _| Referent::Other,
    )? {
        AnyObject::New(items) => items
            .into_iter()
            .filter_map(|item| match item {
                AnyObject::New(Part::Member(m)) => Some(m),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    f.finish(c, "TStreamerInfo")?;
    Ok(ClassInfo {
        class_name,
        version,
        members,
    })
}

/// A TStreamerElement subclass: its TStreamerElement base holds all quarry needs;
/// the subclass's own members are skipped by the byte count.
fn read_member(c: &mut Cursor<'_>, class: &str) -> Result<Member, FormatError> {
    let outer = Framing::read(c, class)?;
    // TStreamerSTLstring derives from TStreamerSTL: one more frame to enter.
    let middle = (class == "TStreamerSTLstring")
        .then(|| Framing::read(c, "TStreamerSTL"))
        .transpose()?;
    let base = Framing::read(c, "TStreamerElement")?;
    let (name, _title) = read_tnamed(c)?;
    let type_code = c.i32("fType")?;
    let type_name = {
        c.skip(12, "fSize, fArrayLength, fArrayDim")?;
        if base.version == 1 {
            let n = c.i32("fMaxIndex size")?;
            let n = usize::try_from(n)
                .map_err(|_| FormatError::Corrupt(format!("fMaxIndex of {n} elements")))?;
            c.fits(n, 4, "fMaxIndex")?;
            c.skip(4 * n, "fMaxIndex")?;
        } else {
            c.skip(20, "fMaxIndex")?;
        }
        c.tstring("fTypeName")?
    };
    base.finish(c, "TStreamerElement")?;
    if let Some(middle) = middle {
        middle.finish(c, "TStreamerSTL")?;
    }
    outer.finish(c, class)?;
    Ok(Member {
        name,
        element_class: class.to_string(),
        type_code,
        type_name,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::RootFile;

    /// The split Event class of uproot's test corpus, as uproot lists its
    /// streamer elements (`f.file.streamers["Event"]`).
    #[test]
    fn reads_the_event_class_layout() {
        let path =
            Path::new(crate::REPO).join("testdata/root/uproot-small-evnt-tree-fullsplit.root");
        let file = RootFile::open(std::fs::File::open(path).unwrap()).unwrap();
        let s = file.streamers().unwrap();
        let event = &s.classes["Event"][0];
        assert_eq!(event.version, 1);
        assert_eq!(event.members.len(), 39);
        let first = &event.members[0];
        assert_eq!(
            (
                first.name.as_str(),
                first.element_class.as_str(),
                first.type_code
            ),
            ("Beg", "TStreamerString", 65)
        );
        let vec = s.member("Event", 29, "StlVecI16").unwrap();
        assert_eq!(
            (
                vec.element_class.as_str(),
                vec.type_code,
                vec.type_name.as_str()
            ),
            ("TStreamerSTL", 500, "vector<short>")
        );
        assert_eq!(
            s.member("Event", 28, "StdStr").unwrap().element_class,
            "TStreamerSTLstring"
        );
        assert_eq!(s.member("Event", 19, "N").unwrap().type_name, "int");
        // Found by name when the position does not match.
        assert_eq!(
            s.member("Event", 0, "StlVecStr").unwrap().type_name,
            "vector<string>"
        );
        let p3: Vec<(&str, &str)> = s.classes["P3"][0]
            .members
            .iter()
            .map(|m| (m.name.as_str(), m.type_name.as_str()))
            .collect();
        assert_eq!(p3, [("Px", "int"), ("Py", "double"), ("Pz", "int")]);
        assert!(s.classes.contains_key("TTree") && s.classes.contains_key("TBranchElement"));
    }
}
