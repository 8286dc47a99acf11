//! `self_info`: what the agent is and what it may do.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError};
use crate::policy::Effect;

pub struct SelfInfo;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelfInfoArgs {}

#[async_trait]
impl Tool for SelfInfo {
    const NAME: &'static str = "self_info";
    type Args = SelfInfoArgs;

    fn description(&self) -> &'static str {
        "Describe this agent: version, model, autonomy, workspace, tools."
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    async fn call(&self, _: SelfInfoArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let f = &ctx.facts;
        let mut out = format!(
            "agent: routines {}\nmodel: {}\nautonomy: {}\nworkspace: {}\ntime zone: {}\ntools: {}",
            env!("CARGO_PKG_VERSION"),
            f.model,
            f.autonomy.map_or("unknown", |a| a.as_str()),
            ctx.workspace.display(),
            f.timezone,
            f.tools.join(", "),
        );
        if let Some(r) = &f.routine {
            out.push_str(&format!("\nroutine: {r} (unattended)"));
        }
        Ok(out)
    }
}
