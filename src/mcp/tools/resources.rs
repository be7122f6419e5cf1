//! `read_resource`: any quarry resource URI (`h5://`, `raptor://`) read as
//! `resources/read` reads it, for clients that cannot browse resources.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Context, Effects, ToolDef, Toolset, checked_offset, parse_args};
use crate::job::Job;
use crate::mcp::budget::{json_len, shorten};
use crate::mcp::resources::{self, Contents};
use crate::mcp::response::{ToolError, ToolOutput};

pub static TOOLS: &[ToolDef] = &[ToolDef {
    name: "read_resource",
    title: "Read a quarry resource",
    toolset: Toolset::Resources,
    description: "resources/read for clients without resources: an HDF5 group, dataset or link (h5://, start at path=/) from \
the catalog, or a RAPTOR node's text (raptor://).",
    input_schema: include_str!("../../../schema/tools/read_resource.input.json"),
    output_schema: include_str!("../../../schema/tools/read_resource.output.json"),
    effects: Effects::READS,
    handler: read_resource,
}];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceArgs {
    uri: String,
    /// Members of a group to skip.
    offset: Option<i64>,
}

fn read_resource(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let tool = "read_resource";
    let args: ResourceArgs = parse_args(tool, args)?;
    let offset = checked_offset(tool, "offset", args.offset)?;
    let contents = resources::read(ctx, &args.uri).map_err(resources::tool_error)?;
    let is_dataset = matches!(&contents, Contents::Json(v) if v["kind"] == "dataset");
    let mut out = ToolOutput::new(contents.into_tool_data());
    if is_dataset {
        out = out.suggest(format!(
            "Read values with read_dataset_slice(uri='{}', slice_str='0:10')",
            args.uri
        ));
    }
    // A group's members are paged with `offset`; what is still too long
    // (many or long attributes, a long text) has its longest texts shortened.
    let budget = ctx.budget(tool);
    let remaining = match out.data.get_mut("members") {
        Some(Value::Array(members)) => {
            members.drain(..offset.min(members.len()));
            members.len()
        }
        _ => 0,
    };
    budget.page(&mut out, "/members", offset, remaining, "members");
    if !budget.fits(&out) {
        out = out
            .meta("truncated", true)
            .suggest("Texts too long for max_result_bytes end with a '…[cut here' marker");
        let room = budget.cap - (budget.len(&out) - json_len(&out.data));
        shorten(&mut out.data, room);
    }
    Ok(out)
}
