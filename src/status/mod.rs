//! The status page (SPEC §11): a read-only view of the routines and their
//! runs for the person they belong to, served by `routines daemon` beside the
//! webhooks.
//!
//! | path | page |
//! |---|---|
//! | `GET /` | the routines: triggers, next fire in its zone (`in 20 s`, `3 min ago`: rounded to the nearest unit), paused, last status, a sparkline of recent runs; on top, a line per routine with failures in the last day (how many, the newest with its error) |
//! | `GET /runs?routine=&status=&before=&after=` | recent runs, filtered and paged by id (keyset) |
//! | `GET /runs/{id}` | one run: trigger context, prompt, every model and tool call, output, deliveries, earlier attempts |
//! | `GET /charts` | runs per day by status and tokens per day over 14 days, p50/p95 duration per routine |
//! | `GET /static/style.css` | the stylesheet, from the binary |
//!
//! Pages are HTML rendered on the server from minijinja templates compiled
//! into the binary, with inline SVG charts and no JavaScript at all (the
//! `Content-Security-Policy` forbids scripts). Every value goes through
//! minijinja's HTML auto-escaping: run output, prompts and webhook bodies are
//! text an attacker may have written.
//!
//! With a token ([`StatusState::new`], from `server.token_env`) every page
//! needs it ([`guard`], also for the daemon's `/metrics`); without one the
//! page is open but answers only requests addressed to a loopback host name.
//!
//! The seam to the daemon is narrow: [`router`] over a [`StatusState`] that
//! holds a [`Store`], a [`RoutineList`] the daemon's hot reload replaces, the
//! engine's zone and the token. This module sits at the daemon's layer: it
//! reads the store, routines and config; only the daemon and commands use it.

mod auth;
pub mod format;
mod pages;
mod render;
mod svg;

use std::sync::{Arc, PoisonError, RwLock};

use axum::Router;
use axum::routing::get;
use chrono_tz::Tz;

use crate::config::Secret;
use crate::routine::Routine;
use crate::store::{Store, StoreError};

pub use auth::{COOKIE_NAME, guard};

/// Errors of the status page.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("the status page could not read the database: {0}")]
    Store(#[from] StoreError),
    /// A template compiled into the binary failed; a bug.
    #[error("the status page template {name} failed; this is a bug in routines: {cause}")]
    Template { name: &'static str, cause: minijinja::Error },
    #[error("the status page could not finish the request: {0}")]
    Task(String),
}

/// The loaded routines, shared with the daemon: its hot reload calls
/// [`RoutineList::replace`] and the next request sees the new list. Clones
/// share one list.
#[derive(Clone, Default)]
pub struct RoutineList(Arc<RwLock<Arc<[Arc<Routine>]>>>);

impl std::fmt::Debug for RoutineList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.snapshot().iter().map(|r| &r.name)).finish()
    }
}

impl RoutineList {
    /// A list holding `routines`.
    pub fn new(routines: impl IntoIterator<Item = Arc<Routine>>) -> Self {
        let list = RoutineList::default();
        list.replace(routines);
        list
    }

    /// Replaces the routines (kept sorted by name).
    pub fn replace(&self, routines: impl IntoIterator<Item = Arc<Routine>>) {
        let mut list: Vec<Arc<Routine>> = routines.into_iter().collect();
        list.sort_by(|a, b| a.name.cmp(&b.name));
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = list.into();
    }

    /// The routines as they are now, sorted by name.
    pub fn snapshot(&self) -> Arc<[Arc<Routine>]> {
        self.0.read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// What the pages need. Cheap to clone.
#[derive(Clone)]
pub struct StatusState {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    routines: RoutineList,
    zone: Tz,
    token: Option<Secret>,
    pages: render::Pages,
    /// No SMTP server is configured: a delivered mail only reached the outbox folder.
    mail_outbox: bool,
}

impl std::fmt::Debug for StatusState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusState")
            .field("store", &self.inner.store)
            .field("routines", &self.inner.routines)
            .field("zone", &self.inner.zone)
            .field("token", &self.inner.token)
            .finish()
    }
}

impl StatusState {
    /// The state of the pages: `store` (a connection of its own keeps page
    /// reads off the daemon's writes; WAL lets them run side by side),
    /// `routines`, the engine's `zone` (times are shown in it) and the token
    /// every request must carry, if any. `mail_outbox` when no SMTP server is configured
    /// (`delivery::configured_smtp`): a delivered mail then reads "queued in the outbox (no SMTP
    /// configured)", as `routines run` says it.
    pub fn new(
        store: Store,
        routines: RoutineList,
        zone: Tz,
        token: Option<Secret>,
        mail_outbox: bool,
    ) -> Result<Self, StatusError> {
        let pages = render::Pages::new()?;
        Ok(StatusState { inner: Arc::new(Inner { store, routines, zone, token, pages, mail_outbox }) })
    }

    /// The routine list the daemon replaces on reload.
    pub fn routines(&self) -> &RoutineList {
        &self.inner.routines
    }
}

/// The status page's routes, behind [`guard`] with the state's token. The
/// router sets no fallback, so the daemon can merge it with its own.
pub fn router(state: StatusState) -> Router {
    let token = state.inner.token.clone();
    let pages = Router::new()
        .route("/", get(pages::routines::page))
        .route("/runs", get(pages::runs::page))
        .route("/runs/{id}", get(pages::run::page))
        .route("/charts", get(pages::charts::page))
        .with_state(state);
    guard(pages, token)
        .route(render::STYLE_PATH, get(render::stylesheet))
        .layer(axum::middleware::map_response(render::security_headers))
}
