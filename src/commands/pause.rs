//! `routines pause NAME` and `routines resume NAME [--catch-up]`: stop and restart firing a
//! routine's triggers without editing its file. The state lives in the store, so it survives
//! restarts, and a running daemon sees it at the next fire. While paused, every instant, file
//! event and webhook of the routine is recorded `skipped` with reason `paused` (a webhook still
//! gets 202 with the skipped run's id); `routines run NAME` by hand still works.

use chrono::Utc;
use routines::config::Config;
use routines::routine::{CatchUp, TriggerContext};
use serde_json::json;

use super::{find, print_json};
use crate::app::{Error, engine, open_store, routines};

pub fn pause(config: &Config, name: &str, json_out: bool) -> Result<(), Error> {
    let loaded = routines(config);
    let routine = find(&loaded, name)?;
    let since = open_store(config)?.pause(&routine.name, Utc::now())?;
    if json_out {
        return print_json(&json!({"routine": routine.name, "paused": true, "paused_at": since.to_rfc3339()}));
    }
    eprintln!(
        "paused {}: its triggers are recorded skipped until `routines resume {}`; `routines run {}` still works",
        routine.name, routine.name, routine.name
    );
    Ok(())
}

pub async fn resume(config: Config, name: &str, catch_up: bool, json_out: bool) -> Result<(), Error> {
    let loaded = routines(&config);
    let routine = find(&loaded, name)?.clone();
    let store = open_store(&config)?;
    let Some(since) = store.resume(&routine.name, Utc::now())? else {
        if json_out {
            return print_json(&json!({"routine": routine.name, "paused": false, "was_paused": false}));
        }
        eprintln!("{} was not paused", routine.name);
        return Ok(());
    };
    let missed = store.skipped_while_paused(&routine.name, since)?;
    // The instants skipped while paused run only when asked, once (the latest), and not for a
    // routine whose `catch_up` is `none`.
    let caught_up = if catch_up && missed > 0 && routine.spec.catch_up != CatchUp::None {
        let engine = engine(config.clone(), true)?;
        let report = engine.run(&routine, TriggerContext::Manual, &Default::default(), None).await?;
        Some(report.run_id)
    } else {
        None
    };
    if json_out {
        return print_json(&json!({
            "routine": routine.name,
            "paused": false,
            "was_paused": true,
            "skipped_while_paused": missed,
            "caught_up_run": caught_up,
        }));
    }
    eprintln!(
        "resumed {} (paused since {}; {} fire(s) skipped meanwhile{})",
        routine.name,
        since.with_timezone(&routine.zone).format("%Y-%m-%d %H:%M %Z"),
        missed,
        match caught_up {
            Some(id) => format!("; caught up as run {id}"),
            None if catch_up && missed > 0 => "; catch_up: none, nothing run".into(),
            None if missed > 0 => "; not run: add --catch-up to run the latest now".into(),
            None => String::new(),
        }
    );
    Ok(())
}
