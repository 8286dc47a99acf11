//! The delivery stage of a config: its mail transport, outbox and sender.

use std::sync::Arc;

use super::mail::{self, Mailer, SmtpOptions};
use super::{Deliverer, DeliveryError};
use crate::config::{Config, Env, MailTransport, SmtpSecurity};
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
        let smtp =
            config.mail.as_ref().filter(|m| m.transport != Some(MailTransport::Outbox)).and_then(|m| m.smtp.as_ref());
        let mailer = match smtp {
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
            credentials: credentials(config, env).into(),
        })
    }
}

/// The credentials `config` names, whole: the values of its secret variables (of a URL with a
/// password, the password) and the API key. Not the SMTP login: an address, which mail may be
/// sent from or to.
fn credentials(config: &Config, env: &dyn Env) -> Vec<String> {
    let login = config.mail.as_ref().and_then(|m| m.smtp.as_ref()).and_then(|s| s.username_env.as_deref());
    let mut out: Vec<String> = Vec::new();
    for var in config.secret_vars.iter().filter(|v| Some(v.as_str()) != login) {
        let Some(value) = env.var(var) else { continue };
        let url = reqwest::Url::parse(value.trim()).ok();
        let password = url
            .as_ref()
            .and_then(|u| u.password())
            .map(|p| percent_encoding::percent_decode_str(p).decode_utf8_lossy().into_owned());
        out.push(password.unwrap_or_else(|| value.trim().to_string()));
    }
    out.extend(config.provider.api_key.as_ref().map(|k| k.expose().trim().to_string()));
    out.retain(|v| v.chars().count() >= crate::policy::secrets::MIN_SECRET_CHARS);
    out
}

/// The sender of mail deliveries: `mail.from`, or routines@localhost.
fn mail_from(config: &Config) -> String {
    config.mail.as_ref().map_or_else(|| "Routines <routines@localhost>".to_string(), |m| m.from.clone())
}
