//! A delivery target of a routine, rendered with the run's context into a [`Payload`].

use serde_json::Value;

use super::file::{self, FilePayload};
use super::mail::{self, MailPayload};
use super::{Deliverer, DeliveryError, Payload};
use crate::config::DeliveryTarget;

impl Deliverer {
    /// The payload of the `seq`-th delivery of run `run_id`, or what to show as its target and
    /// why it could not be rendered. `label` names the target in template errors
    /// (`deliver[0]`); `ctx` is the run's context with `output`, `status` and `error`.
    pub(super) fn render(
        &self,
        label: &str,
        target: &DeliveryTarget,
        ctx: &Value,
        run_id: i64,
        seq: u32,
    ) -> Result<Payload, (String, DeliveryError)> {
        match target {
            DeliveryTarget::File(f) => {
                let rendered = self
                    .templates
                    .render_str(&format!("{label}.file.path"), &f.path, ctx)
                    .map_err(|e| (f.path.clone(), e.into()))?;
                let rendered = rendered.trim();
                // What is acted on is the path as rendered; what people read is redacted.
                let shown = self.clean(rendered.to_string());
                self.refuse_secret("path", rendered).map_err(|e| (shown.clone(), e))?;
                let path = file::resolve(&self.workspace, &self.forbidden, &self.protected, rendered)
                    .map_err(|e| (shown.clone(), e))?;
                let content = match &f.template {
                    Some(t) => self.templates.render_file(t, ctx).map_err(|e| (shown.clone(), e.into()))?,
                    None => {
                        let mut out = ctx["output"].as_str().unwrap_or("").to_string();
                        if !out.ends_with('\n') {
                            out.push('\n');
                        }
                        out
                    }
                };
                Ok(Payload::File(FilePayload { path, shown, mode: f.mode.into(), content: self.clean(content) }))
            }
            DeliveryTarget::Mail(m) => {
                let shown = describe_target(target);
                let fail = |e: crate::routine::template::TemplateError| (shown.clone(), DeliveryError::from(e));
                let render = |field: &str, text: &str| {
                    self.templates.render_str(&format!("{label}.mail.{field}"), text, ctx).map_err(fail)
                };
                let output = self.clean(ctx["output"].as_str().unwrap_or("").to_string());
                let name = ctx["routine"]["name"].as_str().unwrap_or("routine").to_string();
                let subject = self.clean(match &m.subject {
                    Some(s) => render("subject", s)?.trim().to_string(),
                    None => format!("{name}: {}", ctx["status"].as_str().unwrap_or("done")),
                });
                let text = match &m.template {
                    Some(t) => self.clean(self.templates.render_file(t, ctx).map_err(fail)?),
                    None => output.clone(),
                };
                let html = match &m.html_template {
                    Some(t) => Some(self.clean(self.templates.render_file(t, ctx).map_err(fail)?)),
                    None => None,
                };
                let attachment = m.attach_output.then(|| mail::Attachment {
                    filename: format!("{name}.md"),
                    content_type: "text/markdown; charset=utf-8".into(),
                    content: output,
                });
                let from = self.from.clone();
                for (field, values) in [
                    ("sender", std::slice::from_ref(&from)),
                    ("recipient", &m.to),
                    ("recipient", &m.cc),
                    ("recipient", &m.bcc),
                ] {
                    for v in values {
                        self.refuse_secret(field, v).map_err(|e| (shown.clone(), e))?;
                    }
                }
                // Fixed at the first attempt and stored with the payload; the
                // random part keeps ids unique across databases.
                let message_id =
                    mail::message_id(run_id, seq, &from).replacen('@', &format!(".{:08x}@", rand::random::<u32>()), 1);
                Ok(Payload::Mail(Box::new(MailPayload {
                    from,
                    to: m.to.clone(),
                    cc: m.cc.clone(),
                    bcc: m.bcc.clone(),
                    subject,
                    text,
                    html,
                    attachment,
                    message_id,
                    date: mail::rfc2822_now(),
                })))
            }
        }
    }
}

impl Deliverer {
    /// Refuses a rendered path or address (`field`) that holds a whole credential (any the
    /// process knows, a webhook secret learned later included, in any encoded form): acted on
    /// as it is, and stored so, it would put the secret on disk, in a header and in the
    /// database. One that holds only a run of a secret's characters (a folder `sk-proj-x` and a
    /// key `sk-proj-…`) is used as it is; only what people read of it is redacted.
    fn refuse_secret(&self, field: &'static str, text: &str) -> Result<(), DeliveryError> {
        if self.redactor.holds_credential(text) {
            return Err(DeliveryError::SecretInTarget { field });
        }
        Ok(())
    }

    /// `text` without the secrets the process knows: what is delivered, and what people read
    /// of a delivery, is redacted like everything else recorded.
    pub(super) fn clean(&self, text: String) -> String {
        match self.redactor.redact(&text) {
            std::borrow::Cow::Owned(clean) => clean,
            std::borrow::Cow::Borrowed(_) => text,
        }
    }
}

/// The kind of a target, as recorded: `file` or `mail`.
pub(super) fn kind_of(t: &DeliveryTarget) -> &'static str {
    match t {
        DeliveryTarget::File(_) => "file",
        DeliveryTarget::Mail(_) => "mail",
    }
}

/// A target as a person reads it before it is rendered: the path template, the addresses.
fn describe_target(t: &DeliveryTarget) -> String {
    match t {
        DeliveryTarget::File(f) => f.path.clone(),
        DeliveryTarget::Mail(m) => m.to.join(", "),
    }
}
