//! The members of a JSON-RPC message that the codec checks, read from its text
//! in one validating pass that builds nothing (bar the method's name).
//!
//! `classify` used to parse every line into a `serde_json::Value` to check it,
//! then convert that tree into rmcp's typed message: two trees per message. The
//! shape lets a well-formed message skip the first tree: when every check passes
//! here, the text is parsed once into the typed message. Anything else (a check
//! that fails, a duplicate member, a typed parse that fails) goes the old way,
//! which decides the answer; so the answers do not depend on this file.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Type {
    Null,
    Bool,
    Integer,
    OtherNumber,
    String,
    Array,
    Object,
}

/// What the checks need of a message object.
#[derive(Debug, Default)]
pub(super) struct Shape {
    /// `"jsonrpc"`: whether it is the string "2.0".
    pub jsonrpc_2_0: Option<bool>,
    pub id: Option<Type>,
    /// `"method"`: the name when it is a string, else its type.
    pub method: Option<Result<String, Type>>,
    pub params: Option<Params>,
    pub has_result: bool,
    pub has_error: bool,
    /// A member named twice: the caller leaves such a message to the full parse,
    /// whose rule (the last one wins) the typed parse does not share.
    pub duplicate: bool,
}

/// The `params` member: its type and, for an object, the types of `name`,
/// `arguments` and `task` (what `tools/call` checks).
#[derive(Debug)]
pub(super) struct Params {
    pub kind: Type,
    pub name: Option<Type>,
    pub arguments: Option<Type>,
    /// A 2025-11-25 client asking for the call to run as a task.
    pub task: Option<Type>,
    pub duplicate: bool,
}

/// The shape of `text` when it is a JSON object; `None` when it is not JSON or
/// not an object (the full parse answers those).
pub(super) fn of(text: &str) -> Option<Shape> {
    let mut de = serde_json::Deserializer::from_str(text);
    let shape = de.deserialize_any(ShapeVisitor).ok()?;
    de.end().ok()?;
    shape
}

/// Which member a key names.
enum Member {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

struct MemberSeed;

impl<'de> DeserializeSeed<'de> for MemberSeed {
    type Value = Member;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Member, D::Error> {
        d.deserialize_str(MemberSeed)
    }
}

impl<'de> Visitor<'de> for MemberSeed {
    type Value = Member;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Member, E> {
        Ok(match key {
            "jsonrpc" => Member::Jsonrpc,
            "id" => Member::Id,
            "method" => Member::Method,
            "params" => Member::Params,
            "result" => Member::Result,
            "error" => Member::Error,
            _ => Member::Other,
        })
    }
}

/// Any value, fully validated (strings decoded, numbers parsed) and dropped;
/// its type is kept.
struct AnyValue;

impl<'de> DeserializeSeed<'de> for AnyValue {
    type Value = Type;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Type, D::Error> {
        d.deserialize_any(AnyValue)
    }
}

impl<'de> Visitor<'de> for AnyValue {
    type Value = Type;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Type, E> {
        Ok(Type::Null)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Type, E> {
        Ok(Type::Bool)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Type, E> {
        Ok(Type::Integer)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Type, E> {
        // serde_json's `is_i64`: a u64 above i64::MAX is not an integer id.
        Ok(if i64::try_from(v).is_ok() {
            Type::Integer
        } else {
            Type::OtherNumber
        })
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Type, E> {
        Ok(Type::OtherNumber)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Type, E> {
        Ok(Type::String)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Type, A::Error> {
        while seq.next_element_seed(AnyValue)?.is_some() {}
        Ok(Type::Array)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Type, A::Error> {
        while map.next_key_seed(AnyValue)?.is_some() {
            map.next_value_seed(AnyValue)?;
        }
        Ok(Type::Object)
    }
}

/// The `jsonrpc` member: whether it is the string "2.0".
struct IsVersion2;

impl<'de> DeserializeSeed<'de> for IsVersion2 {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(IsVersion2)
    }
}

impl<'de> Visitor<'de> for IsVersion2 {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == "2.0")
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        AnyValue.visit_seq(seq).map(|_| false)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        AnyValue.visit_map(map).map(|_| false)
    }
}

/// The `method` member: its name, or the type it has instead.
struct MethodName;

impl<'de> DeserializeSeed<'de> for MethodName {
    type Value = Result<String, Type>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(MethodName)
    }
}

impl<'de> Visitor<'de> for MethodName {
    type Value = Result<String, Type>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Ok(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Err(Type::Null))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Err(Type::Bool))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        AnyValue.visit_i64(v).map(Err)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        AnyValue.visit_u64(v).map(Err)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        AnyValue.visit_f64(v).map(Err)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        AnyValue.visit_seq(seq).map(Err)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        AnyValue.visit_map(map).map(Err)
    }
}

/// The `params` member.
struct ParamsSeed;

impl<'de> DeserializeSeed<'de> for ParamsSeed {
    type Value = Params;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Params, D::Error> {
        d.deserialize_any(ParamsSeed)
    }
}

impl ParamsSeed {
    fn scalar<E>(kind: Result<Type, E>) -> Result<Params, E> {
        kind.map(|kind| Params {
            kind,
            name: None,
            arguments: None,
            task: None,
            duplicate: false,
        })
    }
}

impl<'de> Visitor<'de> for ParamsSeed {
    type Value = Params;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Params, E> {
        Self::scalar(AnyValue.visit_unit())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Params, E> {
        Self::scalar(AnyValue.visit_bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Params, E> {
        Self::scalar(AnyValue.visit_i64(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Params, E> {
        Self::scalar(AnyValue.visit_u64(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Params, E> {
        Self::scalar(AnyValue.visit_f64(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Params, E> {
        Self::scalar(AnyValue.visit_str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Params, A::Error> {
        Self::scalar(AnyValue.visit_seq(seq))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
        let mut params = Params {
            kind: Type::Object,
            name: None,
            arguments: None,
            task: None,
            duplicate: false,
        };
        while let Some(key) = map.next_key_seed(ParamsKeySeed)? {
            let slot = match key {
                ParamsKey::Name => &mut params.name,
                ParamsKey::Arguments => &mut params.arguments,
                ParamsKey::Task => &mut params.task,
                ParamsKey::Other => {
                    map.next_value_seed(AnyValue)?;
                    continue;
                }
            };
            params.duplicate |= slot.is_some();
            *slot = Some(map.next_value_seed(AnyValue)?);
        }
        Ok(params)
    }
}

/// A key of `params`: the three `tools/call` checks, or another.
enum ParamsKey {
    Name,
    Arguments,
    Task,
    Other,
}

struct ParamsKeySeed;

impl<'de> DeserializeSeed<'de> for ParamsKeySeed {
    type Value = ParamsKey;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ParamsKey, D::Error> {
        d.deserialize_str(ParamsKeySeed)
    }
}

impl<'de> Visitor<'de> for ParamsKeySeed {
    type Value = ParamsKey;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<ParamsKey, E> {
        Ok(match key {
            "name" => ParamsKey::Name,
            "arguments" => ParamsKey::Arguments,
            "task" => ParamsKey::Task,
            _ => ParamsKey::Other,
        })
    }
}

/// The whole message: `Some` for an object, `None` for any other value.
struct ShapeVisitor;

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Option<Shape>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        AnyValue.visit_seq(seq).map(|_| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut s = Shape::default();
        while let Some(member) = map.next_key_seed(MemberSeed)? {
            let seen = match member {
                Member::Jsonrpc => s
                    .jsonrpc_2_0
                    .replace(map.next_value_seed(IsVersion2)?)
                    .is_some(),
                Member::Id => s.id.replace(map.next_value_seed(AnyValue)?).is_some(),
                Member::Method => s.method.replace(map.next_value_seed(MethodName)?).is_some(),
                Member::Params => s.params.replace(map.next_value_seed(ParamsSeed)?).is_some(),
                Member::Result => {
                    map.next_value_seed(AnyValue)?;
                    std::mem::replace(&mut s.has_result, true)
                }
                Member::Error => {
                    map.next_value_seed(AnyValue)?;
                    std::mem::replace(&mut s.has_error, true)
                }
                Member::Other => {
                    map.next_value_seed(AnyValue)?;
                    false
                }
            };
            s.duplicate |= seen;
        }
        Ok(Some(s))
    }
}

impl Shape {
    /// The method of a message that passes every check of `classify` as a
    /// request or notification (whether it has an id is `self.id`); `None` for
    /// anything the full parse must judge.
    pub(super) fn checked_method(&self) -> Option<&str> {
        let params_duplicate = self.params.as_ref().is_some_and(|p| p.duplicate);
        if self.duplicate || params_duplicate || self.jsonrpc_2_0 != Some(true) {
            return None;
        }
        if !matches!(self.id, None | Some(Type::String | Type::Integer)) {
            return None;
        }
        let Some(Ok(method)) = &self.method else {
            return None;
        };
        if self.has_result || self.has_error {
            return None;
        }
        if let Some(p) = &self.params
            && !matches!(p.kind, Type::Object | Type::Array)
        {
            return None;
        }
        if self.id.is_some() && method == rmcp_call_tool() {
            let p = self.params.as_ref()?;
            let fits = p.kind == Type::Object
                && p.name == Some(Type::String)
                && matches!(p.arguments, None | Some(Type::Null | Type::Object))
                && matches!(p.task, None | Some(Type::Object));
            if !fits {
                return None;
            }
        }
        Some(method)
    }

    /// Whether a `tools/call` asks to run as a task (a `task` member).
    pub(super) fn asks_for_task(&self) -> bool {
        self.params.as_ref().is_some_and(|p| p.task.is_some())
    }
}

fn rmcp_call_tool() -> &'static str {
    use rmcp::model::ConstString as _;
    rmcp::model::CallToolRequestMethod::VALUE
}
