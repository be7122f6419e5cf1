//! Pins the bytes the catalog stores for the readers' own types (a ROOT tree's
//! layout in `root_layouts`, an HDF5 object in `hdf5_objects`) to the catalog's
//! schema version. Those types live in the reader crates (`quarry-rootio`,
//! `quarry-hdf5`), away from the catalog: a field renamed, reordered or retyped
//! there changes what an existing catalog decodes to, and only a new
//! `SCHEMA_VERSION` makes quarry rebuild the catalog instead of misreading it.
//!
//! Each golden is the bincode (standard configuration) encoding of a fixed,
//! hand-built value, recorded at the schema version named beside it. When this
//! test fails: if the change to the type is meant, bump `SCHEMA_VERSION` and
//! record the new bytes with it; if not, the change broke stored catalogs.
//!
//! How the bytes read (bincode 2 standard: integers as varints, zigzag for
//! signed; a string or sequence as its varint length then its items; an
//! `Option` as a 0/1 byte then the value; an enum as its varint variant index
//! then its fields): `leaf_bytes_read_as_documented` spells one value out by
//! hand, a check of these rules independent of the recorded goldens.

use super::{SCHEMA_VERSION, encode};
use crate::formats::hdf5::{
    Attribute, DType, DatasetInfo, Entry, ExternalData, Field, Filter, Member, MemberKind, Object,
};
use crate::formats::root::{Branch, Element, Leaf, Tree};

/// The schema version the goldens below were recorded at.
const GOLDEN_SCHEMA_VERSION: u32 = 18;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn assert_pinned(what: &str, bytes: &[u8], golden: &str) {
    assert_eq!(
        SCHEMA_VERSION, GOLDEN_SCHEMA_VERSION,
        "the catalog's schema version moved: record the goldens of {what} (and the others) at the new version"
    );
    assert_eq!(
        hex(bytes),
        golden,
        "the stored encoding of {what} changed at schema version {SCHEMA_VERSION}: bump catalog::SCHEMA_VERSION and record the new bytes, or undo the change"
    );
}

fn leaf() -> Leaf {
    Leaf {
        name: "px".into(),
        title: "px/F".into(),
        class_name: "TLeafF".into(),
        len: 1,
        len_type: 4,
        is_unsigned: false,
        count: None,
        element_id: Some(-1),
        element_type: Some(5),
    }
}

fn ttree() -> Tree {
    let inner = Branch {
        name: "muons.pt".into(),
        title: "pt[nmu]".into(),
        class_name: "TBranchElement".into(),
        compress: -1,
        entries: 3,
        tot_bytes: 300,
        zip_bytes: 150,
        write_basket: 1,
        basket_entry: vec![0, 3],
        basket_seek: vec![1000, 0],
        basket_bytes: vec![150, 0],
        embedded_baskets: vec![vec![7, 8]],
        leaves: vec![leaf()],
        branches: Vec::new(),
        element: Some(Element {
            class_name: "Muon".into(),
            parent_name: "muons".into(),
            clones_name: "Muon".into(),
            id: 2,
            kind: 31,
            streamer_type: 105,
            count_branch: Some("nmu".into()),
            member_type: Some("vector<float>".into()),
        }),
    };
    let outer = Branch {
        name: "muons".into(),
        title: String::new(),
        class_name: "TBranchElement".into(),
        compress: 101,
        entries: 3,
        tot_bytes: 400,
        zip_bytes: 200,
        write_basket: 0,
        basket_entry: vec![0],
        basket_seek: Vec::new(),
        basket_bytes: Vec::new(),
        embedded_baskets: Vec::new(),
        leaves: Vec::new(),
        branches: vec![inner],
        element: None,
    };
    Tree {
        name: "events".into(),
        title: "Events".into(),
        entries: 3,
        tot_bytes: 1234,
        zip_bytes: -5,
        branches: vec![outer],
    }
}

fn attribute() -> Attribute {
    Attribute {
        name: "units".into(),
        dtype: DType::String {
            fixed: Some(3),
            utf8: true,
        },
        shape: vec![],
        value: Some("\"GeV\"".into()),
        truncated: false,
    }
}

fn group() -> Object {
    Object {
        path: "/".into(),
        aliases: vec!["/again".into()],
        entry: Entry::Group {
            members: vec![Member {
                name: "energy".into(),
                kind: MemberKind::Dataset,
                shape: Some(vec![10, 2]),
                dtype: Some("<f8".into()),
            }],
            attributes: vec![attribute()],
        },
    }
}

fn dataset() -> Object {
    let dtype = DType::Compound {
        size: 24,
        fields: vec![
            Field {
                name: "id".into(),
                dtype: DType::Int {
                    size: 4,
                    signed: false,
                    big_endian: true,
                },
            },
            Field {
                name: "x".into(),
                dtype: DType::Float {
                    size: 8,
                    big_endian: false,
                },
            },
            Field {
                name: "flag".into(),
                dtype: DType::Bool,
            },
            Field {
                name: "state".into(),
                dtype: DType::Enum {
                    size: 1,
                    signed: true,
                    members: vec![("OFF".into(), 0), ("ON".into(), -1)],
                },
            },
            Field {
                name: "hits".into(),
                dtype: DType::Array {
                    base: Box::new(DType::VarLen(Box::new(DType::Reference))),
                    dims: vec![2],
                },
            },
            Field {
                name: "blob".into(),
                dtype: DType::Unsupported("opaque".into()),
            },
        ],
    };
    Object {
        path: "/energy".into(),
        aliases: Vec::new(),
        entry: Entry::Dataset(Box::new(DatasetInfo {
            shape: Some(vec![10, 2]),
            maxshape: vec![None, Some(2)],
            dtype,
            layout: "chunked".into(),
            chunks: Some(vec![5, 2]),
            filters: vec![Filter {
                id: 1,
                name: "gzip".into(),
                settings: vec![4],
            }],
            fill_value: Some("0".into()),
            storage_size: 300,
            logical_size: 480,
            attributes: vec![attribute()],
            external_data: vec![
                ExternalData::Storage {
                    file: "raw.bin".into(),
                    offset: 16,
                    size: None,
                },
                ExternalData::VirtualSource {
                    file: ".".into(),
                    dataset: "/src".into(),
                },
            ],
            external_data_total: 2,
            chunks_written: Some(3),
        })),
    }
}

fn others() -> Vec<Object> {
    vec![
        Object {
            path: "/t".into(),
            aliases: Vec::new(),
            entry: Entry::Datatype {
                dtype: DType::String {
                    fixed: None,
                    utf8: false,
                },
            },
        },
        Object {
            path: "/soft".into(),
            aliases: Vec::new(),
            entry: Entry::SoftLink {
                target: "/energy".into(),
                dangling: true,
            },
        },
        Object {
            path: "/ext".into(),
            aliases: Vec::new(),
            entry: Entry::ExternalLink {
                file: "other.h5".into(),
                path: "/x".into(),
            },
        },
    ]
}

#[test]
fn leaf_bytes_read_as_documented() {
    // Spelled out by hand from bincode's standard rules (module docs).
    let mut expected = vec![2];
    expected.extend(b"px");
    expected.push(4);
    expected.extend(b"px/F");
    expected.push(6);
    expected.extend(b"TLeafF");
    expected.extend([2, 8, 0]); // len 1, len_type 4 (zigzag), is_unsigned false
    expected.push(0); // count: None
    expected.extend([1, 1]); // element_id: Some(-1) (zigzag 1)
    expected.extend([1, 10]); // element_type: Some(5) (zigzag 10)
    assert_eq!(hex(&encode(&leaf())), hex(&expected));
}

#[test]
fn a_root_tree_layout_is_pinned_to_the_schema_version() {
    assert_pinned("formats::root::Tree", &encode(&ttree()), ROOT_TREE);
}

#[test]
fn hdf5_objects_are_pinned_to_the_schema_version() {
    assert_pinned("an HDF5 group Object", &encode(&group()), HDF5_GROUP);
    assert_pinned("an HDF5 dataset Object", &encode(&dataset()), HDF5_DATASET);
    assert_pinned("the other HDF5 Objects", &encode(&others()), HDF5_OTHERS);
}

const ROOT_TREE: &str = "066576656e7473064576656e747306fba4090901056d756f6e73000e544272616e6368456c656d656e74ca06fb2003fb90010001000000000001086d756f6e732e70740770745b6e6d755d0e544272616e6368456c656d656e740106fb5802fb2c010102000602fbd0070002fb2c010001020708010270780470782f4606544c65616646020800000101010a0001044d756f6e056d756f6e73044d756f6e043ed201036e6d75010d766563746f723c666c6f61743e00";
const HDF5_GROUP: &str = "012f01062f616761696e000106656e657267790101020a0201033c66380105756e69747303010301000105224765562200";
const HDF5_DATASET: &str = "072f656e65726779000101020a020200010205180602696400040001017801080004666c61670205737461746504010102034f464600024f4e010468697473060708010204626c6f6209066f7061717565076368756e6b656401020502010204677a69700104010130fb2c01fbe0010105756e697473030103010001052247655622000200077261772e62696e100001012e042f737263020103";
const HDF5_OTHERS: &str =
    "03022f740002030000052f736f66740003072f656e6572677901042f6578740004086f746865722e6835022f78";
