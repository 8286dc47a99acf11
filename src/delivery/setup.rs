//! The delivery stage of a config: its mail transport, outbox and sender.

use std::sync::Arc;

use super::mail::{self, Mailer, SmtpOptions};
use super::{Deliverer, DeliveryError};
use crate::config::{Config, Env, MailTransport, SmtpSecurity, SmtpSettings};
use crate::policy::Redactor;
use crate::routine::template::Templates;
use crate::store::Store;

impl Deliverer {
    /// The delivery stage of `config`, recording in `store` and rendering with `templates`. Mail
    /// goes over SMTP when `mail.smtp` is set (and `transport` is not `outbox`), else to `.eml`
    /// files in `data_dir/outbox`; the SMTP credentials are read from `env`. Nothing is
    /// connected yet.
    pub fn open(
        config: &Config,
        env: &dyn Env,
        store: Store,
        templates: Arc<Templates>,
    ) -> Result<Deliverer, DeliveryError> {
        let outbox = config.data_dir.join("outbox");
        let mailer = match configured_smtp(config) {
            Some(s) => {
                let extra_root_pem = match &s.ca_file {
                    Some(f) => {
                        let path = match config.file.as_ref().and_then(|c| c.parent()) {
                            Some(dir) if f.is_relative() => dir.join(f),
                            _ => f.clone(),
                        };
                        Some(std::fs::read(&path).map_err(|source| DeliveryError::CaFile { path, source })?)
                    }
                    None => None,
                };
                Mailer::smtp(SmtpOptions {
                    host: s.host.clone(),
                    port: s.port,
                    security: match s.security {
                        SmtpSecurity::Starttls => mail::Security::Starttls,
                        SmtpSecurity::Tls => mail::Security::Tls,
                        SmtpSecurity::None => mail::Security::None,
                    },
                    username: s.username_env.as_deref().and_then(|v| env.var(v)),
                    password: s.password_env.as_deref().and_then(|v| env.var(v)),
                    timeout: s.timeout.get(),
                    extra_root_pem,
                })
                .map_err(DeliveryError::Smtp)?
            }
            None => Mailer::outbox(outbox.clone()),
        };
        Ok(Deliverer {
            mailer,
            redactor: Redactor::for_config(config, env),
            outbox,
            store,
            templates,
            workspace: config.workspace.clone(),
            forbidden: config.forbidden_paths.clone(),
            protected: crate::policy::paths::with_canonical_forms(&config.engine_files()),
            from: mail_from(config),
        })
    }
}

/// The sender of mail deliveries: `mail.from`, or routines@localhost.
fn mail_from(config: &Config) -> String {
    config.mail.as_ref().map_or_else(|| "Routines <routines@localhost>".to_string(), |m| m.from.clone())
}

/// The SMTP server mail goes to; `None` when mail is only written to the outbox folder (no
/// `mail.smtp`, or `transport: outbox`).
pub fn configured_smtp(config: &Config) -> Option<&SmtpSettings> {
    config.mail.as_ref().filter(|m| m.transport != Some(MailTransport::Outbox)).and_then(|m| m.smtp.as_ref())
}
