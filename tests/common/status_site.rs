//! The status page over real runs: a project with a routine for every kind of trigger, a
//! real SQLite store filled with two weeks of runs ([`super::status_seed`]), and the page's
//! router serving on a port of 127.0.0.1.

use std::sync::Arc;

use chrono::Utc;
use routines::config::{ProcessEnv, Secret};
use routines::routine::load_all;
use routines::status::{RoutineList, StatusState, router};
use routines::store::{Store, to_db_time};
use routines::tools::Registry;

use super::Routines;
use super::status_seed::{Seeded, seed};

/// The project, its store, and the page serving on a port.
pub struct Site {
    /// The project folder, removed with the site.
    _project: Routines,
    pub store: Store,
    pub base: String,
    pub seeded: Seeded,
    pub routines: RoutineList,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Site {
    fn drop(&mut self) {
        self.server.abort();
    }
}

const ROUTINES: [(&str, &str); 6] = [
    (
        "nightly-backup",
        r#"description: Backs up /srv with restic and says what changed
on:
  - cron: "0 2 * * *"
    timezone: Europe/Berlin
agent: { tools: [shell], allow_commands: [restic] }
prompt: Back up /srv with restic, then summarize what changed.
deliver:
  - file: { path: "reports/backup.md" }
on_failure:
  deliver: [ { mail: { to: [oncall@example.com], subject: "backup failed" } } ]
"#,
    ),
    (
        "daily-report",
        r#"description: Yesterday's commits, summarized
on:
  - cron: "0 9 * * 1-5"
prompt: Summarize yesterday's commits.
deliver:
  - file: { path: "reports/daily.md" }
"#,
    ),
    (
        "deploy-hook",
        r#"description: Checks a deploy when CI calls
on:
  - webhook: { path: /hooks/deploy, auth: none }
prompt: "Check the deploy: {{ trigger.body }}"
deliver:
  - mail: { to: [ops@example.com], subject: "deploy checked" }
"#,
    ),
    (
        "inbox-watch",
        r#"description: Reads new CSV files in the inbox
on:
  - file: { paths: ["inbox/*.csv"], events: [create] }
prompt: "Read {{ trigger.path }} and list its totals."
"#,
    ),
    (
        "health-ping",
        r#"on:
  - every: 6h
prompt: Check that the services answer.
"#,
    ),
    (
        "weekly-digest",
        r#"description: The week in one page
enabled: false
on:
  - cron: "0 8 * * 1"
prompt: Write the weekly digest.
"#,
    ),
];

impl Site {
    /// A site whose page needs `token`, if any.
    pub async fn start(token: Option<&str>) -> Site {
        let project = Routines::offline();
        for (name, yaml) in ROUTINES {
            project.write(&format!("routines/{name}.yaml"), yaml);
        }
        let config =
            routines::config::load(Some(&project.path().join("routines.yaml")), project.path(), &ProcessEnv).unwrap();
        let loaded = load_all(&config, None, &Registry::builtin().names());
        assert!(loaded.diagnostics.is_empty(), "{}", loaded.diagnostics);
        let store = Store::open(&config.database_path()).unwrap();
        let seeded = seed(&store, Utc::now());
        // `routines pause inbox-watch`, as the pause command will record it.
        store
            .with_conn(|c| {
                c.execute(
                    "INSERT INTO routine_state (routine, paused_at, updated_at) VALUES ('inbox-watch', ?1, ?1)",
                    [to_db_time(Utc::now())],
                )
            })
            .unwrap();
        let list = RoutineList::new(loaded.routines.into_iter().map(Arc::new));
        // No SMTP in the project: the seeded mails that arrived only reached the outbox.
        let outbox_only = routines::delivery::configured_smtp(&config).is_none();
        let state = StatusState::new(store.clone(), list.clone(), config.timezone, token.map(Secret::new), outbox_only)
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let server = tokio::spawn(async move {
            axum::serve(listener, router(state)).await.unwrap();
        });
        Site { _project: project, store, base, seeded, routines: list, server }
    }

    /// The address of `path` on the site.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}
