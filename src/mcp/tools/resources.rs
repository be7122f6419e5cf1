//! `read_resource`: any quarry resource URI (`h5://`, `raptor://`) read as
//! `resources/read` reads it, for clients that cannot browse resources.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Context, Effects, ToolDef, Toolset, parse_args};
use crate::job::Job;
use crate::mcp::resources::{self, Contents};
use crate::mcp::response::{ToolError, ToolOutput};

pub static TOOLS: &[ToolDef] = &[ToolDef {
    name: "read_resource",
    title: "Read a quarry resource",
    toolset: Toolset::Resources,
    description: "Returns what MCP resources/read returns for a quarry resource URI, for clients that cannot browse \
resources. h5://<absolute file path>?path=<object path>: a group (attributes, members with kind, shape and dtype), a \
dataset (shape, dtype, size, chunks, compression, fill value, attributes) or a link (kind and target), from the catalog; \
start from h5://<file>?path=/ with a file from list_files(kind='hdf5'). raptor://{dataset_id}/nodes/{node_id} (from \
rag_retrieve): the node's text as contents.",
    input_schema: include_str!("../../../schema/tools/read_resource.input.json"),
    output_schema: include_str!("../../../schema/tools/read_resource.output.json"),
    effects: Effects::READS,
    handler: read_resource,
}];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceArgs {
    uri: String,
}

fn read_resource(
    ctx: &Context,
    _job: &Job,
    args: Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    let args: ResourceArgs = parse_args("read_resource", args)?;
    let contents = resources::read(ctx, &args.uri).map_err(resources::tool_error)?;
    let is_dataset = matches!(&contents, Contents::Json(v) if v["kind"] == "dataset");
    let mut out = ToolOutput::new(contents.into_tool_data());
    if is_dataset {
        out = out.suggest(format!(
            "Read values with read_dataset_slice(uri='{}', slice_str='0:10')",
            args.uri
        ));
    }
    Ok(out)
}
