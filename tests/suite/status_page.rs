//! The status page (SPEC §11) over a real store filled with real runs: every page over
//! HTTP, its token, hostile text, and a real headless Chromium that loads each page,
//! follows links by clicking, reads the DOM and keeps screenshots (light and dark) under
//! `target/screenshots/`. Browser tests print why and return when Chromium is missing.

use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, CONTENT_SECURITY_POLICY, COOKIE, HOST, LOCATION, SET_COOKIE, WWW_AUTHENTICATE};

use crate::common::browser::{Browser, Options};
use crate::common::status_seed::{HOSTILE, seed};
use crate::common::status_site::Site;

/// One browser at a time: the machines that run the tests have two cores.
static BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const TOKEN: &str = "ui-token-3f9a7c";

fn client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).no_proxy().build().unwrap()
}

/// A page's status and HTML, with the entities minijinja writes turned back into text.
async fn get(site: &Site, path: &str) -> (StatusCode, String) {
    let r = client().get(site.url(path)).send().await.unwrap();
    (r.status(), unescape(&r.text().await.unwrap()))
}

fn unescape(html: &str) -> String {
    [("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&#x27;", "'"), ("&#x2f;", "/"), ("&amp;", "&")]
        .iter()
        .fold(html.to_string(), |text, (entity, c)| text.replace(entity, c))
}

// ---------------------------------------------------------------------------------------
// Over HTTP
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn every_page_answers_with_what_the_store_holds() {
    let site = Site::start(None).await;
    let s = site.seeded;

    let (status, home) = get(&site, "/").await;
    assert_eq!(status, StatusCode::OK);
    for name in ["nightly-backup", "daily-report", "deploy-hook", "inbox-watch", "health-ping", "weekly-digest"] {
        assert!(home.contains(&format!("id=\"routine-{name}\"")), "{name} is listed");
    }
    assert!(home.contains("0 2 * * * (Europe/Berlin)"), "cron triggers show their zone");
    assert!(home.contains(">paused</span>") && home.contains(">disabled</span>"), "paused and disabled are shown");
    assert!(home.contains(&format!("href=\"/runs/{}\"", s.failed_run)), "last night's failure links to its run");

    let (status, runs) = get(&site, "/runs?routine=nightly-backup&status=failed").await;
    assert_eq!(status, StatusCode::OK);
    assert!(runs.contains(&format!(">#{}</a>", s.failed_run)));
    assert_eq!(runs.matches("class=\"run s-row-").count(), 1, "only the failed backup matches");

    let (status, run) = get(&site, &format!("/runs/{}", s.failed_run)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(run.contains("repository is already locked exclusively by PID 4242"));
    assert!(run.contains("Earlier attempts") && run.contains("Attempt 1"), "the first attempt is kept");
    assert!(run.contains("mailbox unavailable"), "the failed delivery's error is shown");

    let (status, charts) = get(&site, "/charts").await;
    assert_eq!(status, StatusCode::OK);
    assert!(charts.contains("Runs per day") && charts.contains("nightly-backup"));

    let (status, css) = get(&site, "/static/style.css").await;
    assert_eq!(status, StatusCode::OK);
    assert!(css.contains("prefers-color-scheme: dark"));
}

#[tokio::test]
async fn the_page_follows_reloaded_routines_and_new_runs() {
    let site = Site::start(None).await;
    // The daemon's hot reload replaces the list: a routine whose file is gone leaves the page.
    let kept: Vec<_> = site.routines.snapshot().iter().filter(|r| r.name != "weekly-digest").cloned().collect();
    site.routines.replace(kept);
    let (_, home) = get(&site, "/").await;
    assert!(!home.contains("routine-weekly-digest") && home.contains("routine-daily-report"));

    // A run the engine records now is on the next request.
    let id = site
        .store
        .create_run(&routines::store::NewRun {
            kind: routines::store::RunKind::Routine,
            routine: Some("daily-report".into()),
            trigger: "manual".into(),
            scheduled_for: None,
            status: routines::store::RunStatus::Running,
        })
        .unwrap();
    let (_, runs) = get(&site, "/runs?routine=daily-report&status=running").await;
    assert!(runs.contains(&format!(">#{id}</a>")), "{runs}");
    let (_, home) = get(&site, "/").await;
    assert!(home.contains(&format!("<a class=\"last-run\" href=\"/runs/{id}\">")), "the newest run is the last run");
    // Its page says in words what fired it; the stored kind stays `manual`.
    let (_, page) = get(&site, &format!("/runs/{id}")).await;
    assert!(page.contains("<dd>fired by hand</dd>"), "{page}");
    assert!(page.contains("Fired by hand, with no further context."), "{page}");
}

/// A run of `routine` fired by hand just now, running.
fn fired_by_hand(site: &Site, routine: &str) -> i64 {
    use routines::store::{NewRun, RunKind, RunStatus};
    let new = NewRun {
        kind: RunKind::Routine,
        routine: Some(routine.into()),
        trigger: "manual".into(),
        scheduled_for: None,
        status: RunStatus::Running,
    };
    site.store.create_run(&new).unwrap()
}

/// Four failures of one routine within the hour are one line of "Needs a look" that counts
/// them and shows the newest; times of a minute ago read as past, not "just now".
#[tokio::test]
async fn needs_a_look_has_one_line_per_routine_and_recent_times_say_their_direction() {
    use routines::store::{RunOutcome, RunStatus};
    let site = Site::start(None).await;
    let fail = |error: String| {
        let id = fired_by_hand(&site, "nightly-backup");
        site.store.finish_run(id, &RunOutcome::new(RunStatus::Failed, Some(error))).unwrap();
        id
    };
    let ids: Vec<i64> = (1..=4).map(|n| fail(format!("disk full {n}"))).collect();
    let newest = ids[3];
    let seeded = site.store.get_run(site.seeded.failed_run).unwrap().unwrap();
    let in_window = chrono::Utc::now() - seeded.created_at < chrono::Duration::hours(24);
    let failures = 4 + usize::from(in_window);

    let (_, home) = get(&site, "/").await;
    let section = home.split("class=\"attention\"").nth(1).expect("a Needs a look section");
    let section = section.split("</section>").next().unwrap();
    let lines: Vec<&str> = section.split("<li>").skip(1).filter(|l| l.contains("nightly-backup")).collect();
    assert_eq!(lines.len(), 1, "one line for the routine: {section}");
    assert!(lines[0].contains(&format!("href=\"/runs/{newest}\"")), "it links the newest failure: {}", lines[0]);
    assert!(lines[0].contains("disk full 4"), "with the newest error: {}", lines[0]);
    assert!(
        lines[0].contains(&format!(">{failures} failures</a>"))
            && lines[0].contains("href=\"/runs?routine=nightly-backup\""),
        "and how many, linked to the routine's runs: {}",
        lines[0]
    );
    assert!(!home.contains("just now"), "a time says whether it is past or ahead: {home}");
    assert!(lines[0].contains(" s ago</span>") || lines[0].contains("· now</span>"), "{}", lines[0]);
}

/// With no SMTP configured, a delivered mail only reached the outbox folder: its run page says
/// so in the words `routines run` uses, and a delivered file still reads "delivered".
#[tokio::test]
async fn a_mail_that_only_reached_the_outbox_says_so_on_its_run_page() {
    use routines::store::{DeliveryStatus, NewDelivery, RunOutcome, RunStatus};
    let site = Site::start(None).await;
    let id = fired_by_hand(&site, "daily-report");
    for (seq, (kind, target)) in [("mail", "ops@example.com"), ("file", "reports/daily.md")].into_iter().enumerate() {
        let d = NewDelivery {
            run_id: id,
            seq: seq as u32,
            kind,
            target,
            on_failure: false,
            payload: "{}",
            acted_on: &[],
            failed: None,
        };
        let did = site.store.add_delivery(&d).unwrap();
        site.store.set_delivery(did, DeliveryStatus::Delivered, None).unwrap();
    }
    site.store.finish_run(id, &RunOutcome::new(RunStatus::Succeeded, None)).unwrap();
    let (status, page) = get(&site, &format!("/runs/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    let rows: Vec<&str> = page.split("<tr class=\"delivery").skip(1).collect();
    assert_eq!(rows.len(), 2, "{page}");
    assert!(rows[0].contains(">queued in the outbox (no SMTP configured)</span>"), "{}", rows[0]);
    assert!(rows[1].contains(">delivered</span>"), "{}", rows[1]);
}

#[tokio::test]
async fn runs_are_paged_by_id_without_gaps_or_repeats() {
    let site = Site::start(None).await;
    let mut seen = Vec::new();
    let mut path = "/runs".to_string();
    loop {
        let (status, html) = get(&site, &path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        let ids: Vec<i64> = html
            .split("class=\"run-link\" href=\"/runs/")
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap().parse().unwrap())
            .collect();
        assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first on {path}");
        seen.extend(ids);
        match html.split("rel=\"next\" href=\"").nth(1) {
            Some(rest) => path = rest.split('"').next().unwrap().to_string(),
            None => break,
        }
    }
    assert_eq!(seen.len(), site.seeded.runs);
    let mut sorted = seen.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted.dedup();
    assert_eq!(sorted, seen, "every run once, in order");
    // Back from the second page to the first.
    let second = format!("/runs?before={}", seen[49]);
    let (_, html) = get(&site, &second).await;
    let newer = html.split("rel=\"prev\" href=\"").nth(1).unwrap().split('"').next().unwrap();
    let (_, first) = get(&site, newer).await;
    assert!(
        first.contains(&format!("href=\"/runs/{}\"", seen[0]))
            && first.contains(&format!("href=\"/runs/{}\"", seen[49]))
    );
}

/// The runs the tests count on exist whatever the day and hour the tests run at.
#[test]
fn the_seeded_runs_hold_at_every_hour_of_the_week() {
    let start = chrono::DateTime::parse_from_rfc3339("2025-03-27T00:30:00Z").unwrap().with_timezone(&chrono::Utc);
    for h in (0..24 * 7).step_by(5) {
        let now = start + chrono::Duration::hours(h);
        let store = routines::store::Store::open_in_memory().unwrap();
        let s = seed(&store, now);
        let count = |sql: &str| -> i64 { store.with_conn(|c| c.query_row(sql, [], |r| r.get(0))).unwrap() };
        let failed = store.get_run(s.failed_run).unwrap().unwrap();
        let age = now - failed.created_at;
        assert!(age >= chrono::Duration::zero() && age < chrono::Duration::hours(24), "{now}: {age}");
        assert_eq!(count("SELECT COUNT(*) FROM runs WHERE routine = 'nightly-backup'"), 14, "{now}");
        assert_eq!(count("SELECT COUNT(*) FROM runs WHERE routine = 'daily-report' AND status = 'timed_out'"), 1);
        assert_eq!(count("SELECT MAX(id) FROM runs WHERE routine = 'nightly-backup'"), s.failed_run, "{now}");
        assert_eq!(count("SELECT COUNT(*) FROM runs"), s.runs as i64);
    }
}

#[tokio::test]
async fn bad_addresses_get_pages_that_say_what_is_wrong() {
    let site = Site::start(None).await;
    let (status, html) = get(&site, "/runs?status=done").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(html.contains("There is no run status “done”"), "{html}");
    let (status, html) = get(&site, "/runs/999999").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(html.contains("There is no run “999999”"));
    let (status, _) = get(&site, "/runs/abc").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn pages_forbid_scripts_and_hostile_text_stays_text() {
    let site = Site::start(None).await;
    let r = client().get(site.url(&format!("/runs/{}", site.seeded.hostile_run))).send().await.unwrap();
    let csp = r.headers()[CONTENT_SECURITY_POLICY].to_str().unwrap().to_string();
    assert!(csp.contains("default-src 'none'") && !csp.contains("script-src"), "{csp}");
    assert_eq!(r.headers()["referrer-policy"], "no-referrer");
    let html = r.text().await.unwrap();
    for tag in ["<script", "<iframe", "<img", "<style", "<svg", "<a href=\"javascript"] {
        assert!(!html.contains(tag), "{tag} reached the page as markup");
    }
    assert!(html.contains("&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;&#x2f;script&gt;"), "shown as text");
    assert!(html.contains("{{ 7*7 }} {% raw %}"), "template syntax in a value is not evaluated");
}

#[tokio::test]
async fn without_a_token_only_loopback_host_names_are_answered() {
    let site = Site::start(None).await;
    for host in ["127.0.0.1:8787", "localhost", "[::1]:8787"] {
        let r = client().get(site.url("/")).header(HOST, host).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{host}");
    }
    // A web page that points its own name at 127.0.0.1 (DNS rebinding) gets nothing.
    let r = client().get(site.url("/runs")).header(HOST, "attacker.example:8787").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(!r.text().await.unwrap().contains("nightly-backup"));
}

#[tokio::test]
async fn with_a_token_every_page_needs_it() {
    let site = Site::start(Some(TOKEN)).await;
    let http = client();
    for path in ["/", "/runs", "/charts", &format!("/runs/{}", site.seeded.failed_run)] {
        let r = http.get(site.url(path)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(r.headers()[WWW_AUTHENTICATE], "Bearer realm=\"routines\"");
        assert!(!r.text().await.unwrap().contains("nightly-backup"), "{path} shows nothing without the token");
    }
    let bearer = |t: &str| format!("Bearer {t}");
    let r = http.get(site.url("/charts")).header(AUTHORIZATION, bearer(TOKEN)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    for wrong in ["ui-token-3f9a7", "ui-token-3f9a7cc", "UI-TOKEN-3F9A7C", ""] {
        let r = http.get(site.url("/")).header(AUTHORIZATION, bearer(wrong)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{wrong:?}");
    }
    // The stylesheet holds nothing secret, and the 401 page uses it.
    assert_eq!(http.get(site.url("/static/style.css")).send().await.unwrap().status(), StatusCode::OK);
}

#[tokio::test]
async fn the_token_in_the_address_becomes_a_cookie_and_leaves_the_address() {
    let site = Site::start(Some(TOKEN)).await;
    let http = client();
    let r =
        http.get(site.url(&format!("/runs?status=failed&token={TOKEN}&routine=nightly-backup"))).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/runs?status=failed&routine=nightly-backup", "the other filters stay");
    let cookie = r.headers()[SET_COOKIE].to_str().unwrap().to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/"), "{cookie}");
    assert!(!cookie.contains(TOKEN), "the cookie does not hold the token itself: {cookie}");
    let pair = cookie.split(';').next().unwrap().to_string();

    let r =
        http.get(site.url("/runs?status=failed&routine=nightly-backup")).header(COOKIE, &pair).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.text().await.unwrap().contains(&format!(">#{}</a>", site.seeded.failed_run)));

    // A wrong token sets nothing; a forged cookie opens nothing.
    let r = http.get(site.url("/?token=guess")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get(SET_COOKIE).is_none());
    let r = http.get(site.url("/")).header(COOKIE, format!("routines_status={TOKEN}")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    // The redirect never leaves the site, whatever the path looks like.
    let r = http.get(site.url(&format!("//attacker.example/?token={TOKEN}"))).send().await.unwrap();
    assert_eq!(r.headers()[LOCATION], "/");
}

// ---------------------------------------------------------------------------------------
// In a real browser
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_new_user_reaches_last_nights_failing_tool_call_in_three_clicks() {
    let _one = BROWSER.lock().await;
    let site = Site::start(None).await;
    let Some(browser) = Browser::start(Options::default()).await else { return };
    let failed = site.seeded.failed_run;

    // From the routines page, the way most people look: the routine, its failed run, the call.
    browser.goto(&site.url("/")).await;
    assert_eq!(browser.title().await, "Routines · routines");
    browser.click(&browser.find("#routine-nightly-backup a.name").await).await; // 1
    assert!(browser.current_url().await.ends_with("/runs?routine=nightly-backup"));
    browser.click(&browser.find(&format!("a.status-link[href='/runs/{failed}']")).await).await; // 2
    assert!(browser.current_url().await.ends_with(&format!("/runs/{failed}")));
    let call = format!("event-{}", site.seeded.failing_call);
    browser.click(&browser.find(&format!("a.failed-call[href='#{call}']")).await).await; // 3
    assert!(browser.current_url().await.ends_with(&format!("/runs/{failed}#{call}")));
    let shown = browser.find(&format!("li#{call}")).await;
    assert!(browser.is_displayed(&shown).await);
    let text = browser.text(&shown).await;
    assert!(text.contains("shell") && text.contains("failed"), "{text}");
    assert!(text.contains("restic backup /srv --tag nightly"), "the arguments: {text}");
    assert!(text.contains("repository is already locked exclusively by PID 4242"), "the result: {text}");
    let place = browser
        .execute(&format!(
            "const r = document.getElementById('{call}').getBoundingClientRect(); return [r.top, innerHeight];"
        ))
        .await;
    let (top, height) = (place[0].as_f64().unwrap(), place[1].as_f64().unwrap());
    assert!(top > -2.0 && top < height / 2.0, "the click brought the failing call into view: {place}");
    browser.screenshot("run-failed-call").await;

    // And straight from the box of runs that need a look: one click.
    browser.goto(&site.url("/")).await;
    let attention = browser.find_with_text(".attention a.attention-run", "nightly-backup").await;
    browser.click(&attention).await;
    assert!(browser.current_url().await.ends_with(&format!("/runs/{failed}")));
    let error = browser.text(&browser.find(".error-box pre").await).await;
    assert!(error.contains("503 Service Unavailable"), "{error}");
    browser.quit().await;
}

#[tokio::test]
async fn every_page_renders_in_light_and_dark_and_is_kept_as_a_screenshot() {
    let _one = BROWSER.lock().await;
    let site = Site::start(None).await;
    let pages = [
        ("routines", "/".to_string()),
        ("runs", "/runs".to_string()),
        ("runs-filtered", "/runs?routine=nightly-backup&status=failed".to_string()),
        ("run", format!("/runs/{}", site.seeded.failed_run)),
        ("run-hostile", format!("/runs/{}", site.seeded.hostile_run)),
        ("charts", "/charts".to_string()),
    ];
    let mut backgrounds = Vec::new();
    for dark in [false, true] {
        let Some(browser) = Browser::start(Options { dark, ..Options::default() }).await else { return };
        let scheme = if dark { "dark" } else { "light" };
        for (name, path) in &pages {
            browser.goto(&site.url(path)).await;
            // Each page has its heading and the stylesheet applied.
            let h1 = browser.text(&browser.find("main h1").await).await;
            assert!(!h1.is_empty(), "{path} has a heading");
            let header = browser.find("header.top").await;
            assert_eq!(browser.css(&header, "display").await, "flex", "{path}: the stylesheet loaded");
            browser.screenshot(&format!("{name}-{scheme}")).await;
            browser.screenshot_window(&format!("{name}-{scheme}-window")).await;
        }
        browser.goto(&site.url("/")).await;
        let body = browser.find("html").await;
        backgrounds.push(browser.css(&body, "background-color").await);

        // What each page is for is in the DOM, not just a 200.
        browser.goto(&site.url("/")).await;
        assert_eq!(browser.find_all("table.routines tbody tr").await.len(), 6);
        let bars = browser.find_all("#routine-nightly-backup svg.spark rect").await;
        assert_eq!(bars.len(), 14, "one bar per recent backup run");
        let next = browser.text(&browser.find("#routine-nightly-backup td.next").await).await;
        assert!(next.contains("Europe/Berlin"), "next fire in the routine's zone: {next}");
        let paused = browser.text(&browser.find("#routine-inbox-watch td.next").await).await;
        assert!(paused.contains("paused"), "{paused}");

        browser.goto(&site.url("/charts")).await;
        let day_bars = browser.find_all("svg.chart rect.s-succeeded").await;
        assert!(day_bars.len() >= 10, "a bar of succeeded runs on most days: {}", day_bars.len());
        assert_eq!(browser.find_all("table.durations tbody tr").await.len(), 6, "p50/p95 of each routine that ran");
        browser.quit().await;
    }
    assert_ne!(backgrounds[0], backgrounds[1], "dark mode changes the page's colours");
}

#[tokio::test]
async fn hostile_text_never_becomes_an_element() {
    let _one = BROWSER.lock().await;
    let site = Site::start(None).await;
    let Some(browser) = Browser::start(Options::default()).await else { return };
    for path in [format!("/runs/{}", site.seeded.hostile_run), "/".into(), "/runs".into()] {
        browser.goto(&site.url(&path)).await;
        assert!(!browser.title().await.contains("pwned"), "{path}");
        for css in ["script", "iframe", "img", "style", "body svg a[href^='javascript']", "[onerror]", "[onload]"] {
            assert!(browser.find_all(css).await.is_empty(), "`{css}` on {path}");
        }
        let handlers = browser
            .execute("return [...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on')).length")
            .await;
        assert_eq!(handlers, 0, "no event handler attribute on {path}");
    }
    browser.goto(&site.url(&format!("/runs/{}", site.seeded.hostile_run))).await;
    let output = browser.text(&browser.find("pre.output").await).await;
    for h in HOSTILE {
        assert!(output.contains(h), "the output shows {h:?} as text");
    }
    let context = browser.text(&browser.find("pre.block").await).await;
    assert!(context.contains("onerror"), "the webhook's headers and body are shown: {context}");
    browser.screenshot("run-hostile-checked").await;
    browser.quit().await;
}

#[tokio::test]
async fn filters_and_pages_work_with_javascript_off() {
    let _one = BROWSER.lock().await;
    let site = Site::start(None).await;
    let Some(browser) = Browser::start(Options { no_javascript: true, ..Options::default() }).await else { return };
    browser.goto(&site.url("/runs")).await;
    // Choose a routine and a status in the form and send it, as a person does.
    browser.click(&browser.find("select[name=routine] option[value='daily-report']").await).await;
    browser.click(&browser.find("select[name=status] option[value='timed_out']").await).await;
    browser.click(&browser.find("form.filters button").await).await;
    let url = browser.wait_for_url(|u| u.contains('?')).await;
    assert!(url.ends_with("/runs?routine=daily-report&status=timed_out"), "{url}");
    let rows = browser.find_all("table.runs tbody tr").await;
    assert_eq!(rows.len(), 1);
    assert!(browser.text(&rows[0]).await.contains("timed out"));

    // Status chips keep the routine; the pager walks back and forth.
    browser.goto(&site.url("/runs")).await;
    browser.click(&browser.find("a[rel=next]").await).await;
    assert!(browser.current_url().await.contains("/runs?before="));
    browser.click(&browser.find("a[rel=prev]").await).await;
    assert!(browser.current_url().await.contains("/runs?after="));
    assert_eq!(browser.find_all("table.runs tbody tr").await.len(), 50);
    browser.quit().await;
}

#[tokio::test]
async fn the_browser_signs_in_once_with_the_token_in_the_address() {
    let _one = BROWSER.lock().await;
    let site = Site::start(Some(TOKEN)).await;
    let Some(browser) = Browser::start(Options::default()).await else { return };
    browser.goto(&site.url("/")).await;
    assert_eq!(browser.text(&browser.find("h1").await).await, "This status page needs its token");
    browser.screenshot("token-needed").await;

    browser.goto(&site.url(&format!("/?token={TOKEN}"))).await;
    assert_eq!(browser.current_url().await, site.url("/"), "the token left the address");
    assert_eq!(browser.text(&browser.find("h1").await).await, "Routines");
    // The cookie carries on: a click to another page needs nothing more.
    browser.click(&browser.find("nav.main-nav a[href='/charts']").await).await;
    assert_eq!(browser.text(&browser.find("h1").await).await, "Charts");
    let cookies = browser.execute("return document.cookie").await;
    assert_eq!(cookies, "", "scripts cannot read the HttpOnly cookie");
    browser.quit().await;
}
