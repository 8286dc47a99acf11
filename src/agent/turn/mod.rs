//! One turn of the loop: model calls and tool calls until a final reply. The requests and
//! replies are in `model.rs`, the tools offered and the named files in `offer.rs`.

mod model;
mod offer;
mod plain;

use std::collections::HashSet;

use tokio::sync::mpsc::UnboundedSender;

use super::events::{AgentEvent, CallRecord, ToolStatus, TurnStats};
use super::evidence;
use super::grounding::{self, FirstCallRule};
use super::hygiene::{self, BadReply, Verdict};
use super::{Agent, AgentError, history};
use super::{named, payload};
use crate::llm::{LlmError, Message, Role};
use model::limit_note;

/// Per-turn bookkeeping of tool calls.
#[derive(Default)]
pub(super) struct CallLedger {
    /// (name, canonical arguments) of every call answered this turn.
    pub(super) answered: HashSet<(String, String)>,
    /// Identical calls made again.
    pub(super) repeats: u32,
}

impl Agent {
    pub(super) async fn run_turn(
        &mut self,
        message: &str,
        tx: Option<&UnboundedSender<AgentEvent>>,
        status: Option<&UnboundedSender<AgentEvent>>,
    ) -> Result<String, AgentError> {
        history::repair(&mut self.history);
        history::clear_reasoning(&mut self.history);
        let specs = self.tool_specs();
        let recalled = self.recall(message);
        let system = self.build_prompt(&specs, &recalled, message);
        let remembered = super::prompt::memory_lines(&recalled);
        let ctx = self.tool_context();

        let mut turn = vec![self.user_message(message)];
        let mut stats = TurnStats::default();
        self.last = stats;
        let mut ledger = CallLedger::default();
        let mut calls_made = Vec::new();
        let mut reply: Option<String> = None;
        let mut last_text = String::new();

        let lang = self.opts.language;
        let mode = self.opts.tool_mode;
        // Every intervention below asks the switch first (`assists.rs`).
        let assists = self.opts.assists.clone();
        let mut first = match assists.allows("first_call_reask") {
            true => FirstCallRule::for_turn(
                self.opts.first_call,
                !specs.is_empty(),
                mode,
                self.provider.accepts_tool_choice(),
            ),
            false => FirstCallRule::Free,
        };
        // A final reply that was not an answer is asked again once per turn; the message goes
        // with the next request only.
        let mut asked: Option<BadReply> = None;
        let mut pending: Option<String> = None;
        let mut withhold = false;
        // Tools whose call the model repeated word for word: they gave what they can this turn.
        let mut spent: Vec<String> = Vec::new();
        // Tools whose call the model is stuck on, held again and again (`holds::stuck_on`): the
        // requests leave them out, and still require a call, until a call of another tool has run.
        let mut withdrawn: Vec<String> = Vec::new();
        // The answer given before the engine asked again on its own account (a failed look sent
        // back, named files no call used), with the note that says why: it stands if asking
        // again fails. Each of those asks once per turn.
        let mut standing: Option<(&'static str, String)> = None;
        // What went back once instead of an answer (a failed look, a file read in part).
        let mut sent = grounding::SentBack {
            file_read: specs.iter().any(|s| s.name == "file_read"),
            writes: specs.iter().any(|s| ["file_write", "file_edit"].contains(&s.name.as_str())),
            ..Default::default()
        };
        let mut named_sent = false;
        // A write made before the files the task names were read is held back once per turn, and
        // so is a copy (`write_check.rs`).
        let mut held_sent = super::holds::HeldSent::default();
        // The next request asks for the answer from the evidence (routine turns).
        let mut from_evidence = false;
        // The next request requires a tool call (a failed look sent back must be looked again;
        // a held write must be followed by the read).
        let mut look_again = false;
        // The records of a tool result the task asks about, with how many calls it was chosen
        // from (`select.rs`).
        let mut selection: Option<(usize, Option<super::select::Selected>)> = None;
        // An answer given in the turn was sent to the evidence (once: `select.rs`, `questions.rs`).
        let mut select_sent = false;
        // A webhook's list, only the items the task asks about (`items.rs`).
        let filtered = match (&self.routine, self.from_payload) {
            (Some(_), true) if payload::applies(message) => self.filter_items(message, &mut stats).await,
            _ => None,
        };
        for iteration in 1..=self.opts.max_iterations {
            let offered = self.offered(&specs, &[spent.as_slice(), withdrawn.as_slice()].concat(), &calls_made);
            let now = system.lines().find(|l| l.starts_with("Current time:")).unwrap_or_default();
            let evidence = if std::mem::take(&mut from_evidence) && self.routine.is_some() {
                // The records the task asks about (`select.rs`), chosen again only when the turn
                // has made calls since.
                // A `git log` whose limit cut it is left out once the whole one ran (`capped.rs`).
                // So is one not cut to the time the task names, once a cut one ran (`window.rs`).
                // And a search for a number once its whole-word search ran (`whole_word.rs`).
                let seen = super::window::without_uncut(message, super::capped::without_superseded(&calls_made));
                let seen = super::whole_word::without_partial(seen);
                // And a `grep` that only counted, once its search printed the lines (`count_only.rs`).
                let seen = super::count_only::without_counted(seen);
                // A count of commits is the number of commits the one `git log` shows; the last
                // commit is the first it shows (`git_log.rs`).
                let counted = super::capped::commits_note(message, &seen, lang);
                let newest = counted.is_none().then(|| super::git_log::newest(message, &seen)).flatten();
                // The newest commit named by the engine is its pick, as a least or a most is.
                let newest_named = newest.is_some();
                let commits = counted.or_else(|| newest.map(|n| n.note(lang)));
                if commits.is_some() {
                    selection = Some((calls_made.len(), None));
                } else if selection.as_ref().is_none_or(|(made, _)| *made != calls_made.len()) {
                    selection = Some((calls_made.len(), self.select_records(message, &seen, &mut stats).await));
                }
                let selected = selection.as_ref().and_then(|(_, s)| s.as_ref());
                let calls = match selected {
                    Some(s) => {
                        let mut calls = seen.to_vec();
                        calls[s.call].result = s.result.clone();
                        std::borrow::Cow::Owned(calls)
                    }
                    None => seen.clone(),
                };
                // Which lines of one list the other lacks (`difference.rs`), when nothing was selected.
                let lacks = selected.is_none().then(|| super::difference::note(message, &seen, lang)).flatten();
                let note = selected.map(|s| s.note.as_str()).or(lacks.as_deref()).or(commits.as_deref());
                let picked = selected.is_some_and(|s| s.picked) || newest_named;
                // A comparison with the last check where nothing was remembered (`since_last.rs`).
                let first_check = super::since_last::asks_since_last(message)
                    .then(|| {
                        let answered = self.last_answer(message).is_some();
                        super::since_last::first_check_note(lang, message, &remembered, &calls_made, answered)
                    })
                    .flatten();
                let note = match (note, first_check) {
                    (Some(n), Some(f)) => Some(format!("{n}\n\n{f}")),
                    (n, f) => n.or(f).map(str::to_string),
                };
                evidence::messages(message, &calls, lang, now, &remembered, note.as_deref(), picked).map(|m| {
                    (m, ("answer_from_evidence", "asked for the final answer from the task and the tool results"))
                })
            } else if let (1, true, Some(routine)) = (iteration, self.from_payload, &self.routine)
                && assists.allows("answer_from_payload")
            {
                let (task, note) =
                    filtered.as_ref().map_or((message, None), |f| (f.task.as_str(), Some(f.note.as_str())));
                let silent = routine.silent_token.as_deref().filter(|t| payload::may_be_silent(message, t));
                payload::messages(task, note, lang, now, &remembered, &routine.name, silent)
                    .map(|m| (m, ("answer_from_payload", "asked for the answer from the webhook data in the prompt")))
            } else {
                None
            };
            // After a second identical call, or when only an answer will do, the model must answer.
            let offer_tools = ledger.repeats < 2 && !withhold && !offered.is_empty() && evidence.is_none();
            let answers_evidence = evidence.is_some();
            let answers_payload = evidence.as_ref().is_some_and(|(_, (kind, _))| *kind == "answer_from_payload");
            let mut request = self.request(&system, &turn, offer_tools, &offered);
            if let Some((messages, (kind, note))) = evidence {
                self.note(kind, note);
                request.messages = messages;
                pending = None;
            }
            if iteration == 1 {
                first.shape(&mut request, mode, lang);
            }
            if std::mem::take(&mut look_again) && first == FirstCallRule::Required && !request.tools.is_empty() {
                request.require_tool = true;
            }
            if let Some(text) = pending.take() {
                grounding::append_user(&mut request.messages, &text);
            }
            let (response, text_shown) = match self.call_model(&request, iteration, tx).await {
                Err(AgentError::Llm(LlmError::ToolChoiceRefused { message, .. })) if request.require_tool => {
                    self.note("tool_choice_refused", &format!("{message}; asked again with an instruction instead"));
                    first = FirstCallRule::refused(&mut request, lang);
                    self.call_model(&request, iteration, tx).await?
                }
                // Asking again was the engine's choice: when it fails, the answer it questioned stands.
                Err(e) if standing.is_some() => {
                    let (kind, answer) = standing.take().unwrap_or_default();
                    self.note(kind, &format!("asking again failed ({e}); the earlier answer stands"));
                    turn.push(Message::assistant(answer.clone()));
                    reply = Some(answer);
                    break;
                }
                other => other?,
            };
            standing = None;
            // Plus the calls beside the turn (the filter of a webhook's list).
            stats.iterations += 1;
            stats.prompt_tokens += response.usage.prompt_tokens;
            stats.completion_tokens += response.usage.completion_tokens;
            // Kept as it grows: a turn that fails later still reports what it used.
            self.last = stats;

            // Calls the model made where tools were withheld: it was still calling tools.
            let dropped = if offer_tools { None } else { response.tool_calls.first().cloned() };
            let (mut content, mut calls, reasoning) = self.interpret(response, offer_tools, tx);
            if answers_evidence {
                // The request asked for the answer after a marker; what precedes it is not output.
                // Nor is an answer copied from a worked example (`comparison.rs`).
                let answer = super::answer::answer_of(&content).to_string();
                let answer = self.not_copied(&request.messages, answer, &mut stats).await;
                // A silence (the token anywhere in it) is no summary that left something out.
                let silent =
                    self.routine.as_ref().and_then(|r| r.silent_token.as_deref()).is_some_and(|t| answer.contains(t));
                // The items the answer must name: a webhook's kept items, or the records a
                // "which" task selected from a tool result.
                let named = match (&filtered, answers_payload) {
                    (Some(filtered), true) => Some(&filtered.kept),
                    (_, false) => selection.as_ref().and_then(|(_, s)| s.as_ref()).and_then(|s| s.kept.as_ref()),
                    _ => None,
                };
                let answer = match named {
                    Some(kept) if !answer.trim().is_empty() && (answers_payload || !silent) => {
                        self.cover_items(kept, &request.messages, &content, answer, &mut stats).await
                    }
                    // A silence beside the records the task's own selection kept from a tool
                    // result is not believed: the 1.5B model answered `NO_REPLY` over the one row
                    // of a status page kept as not operational. The report is asked naming them.
                    Some(kept) if silent && !answers_payload && assists.allows("silence_over_selection") => {
                        self.note(
                            "silence_over_selection",
                            &format!(
                                "a silent answer beside {} records the task asks about; asked to name them",
                                kept.values.len()
                            ),
                        );
                        let report =
                            self.cover_items(kept, &request.messages, &content, String::new(), &mut stats).await;
                        let token = self.routine.as_ref().and_then(|r| r.silent_token.as_deref()).unwrap_or_default();
                        if report.trim().is_empty() || report.contains(token) {
                            answer
                        } else {
                            report.trim().to_string()
                        }
                    }
                    _ => answer,
                };
                // A count the engine made is a number the answer must say (`counted.rs`).
                let counted = selection.as_ref().and_then(|(_, s)| s.as_ref()).and_then(|s| Some((s.count?, &s.note)));
                let answer = match counted {
                    Some((n, note)) if !silent && !answers_payload => {
                        let answer =
                            self.counted_answer(n, note, &request.messages, &content, answer, &mut stats).await;
                        // And one the task weighs against the last check's (`since_last.rs`).
                        let memory = super::since_last::memory_before_stores(&remembered, &calls_made);
                        self.since_last_answer(message, n, &memory, &request.messages, &content, answer, &mut stats)
                            .await
                    }
                    _ => answer,
                };
                content = if answers_payload && !answer.trim().is_empty() && !silent {
                    let (own, data) = payload::own_and_data(message);
                    self.cover_fields(&own, &data, &request.messages, &content, answer, &mut stats).await
                } else {
                    answer
                };
            }
            let mut answer = None;
            if calls.is_empty() {
                let known = |name: &str| self.tools.get(name).is_some();
                match hygiene::settle(&content, &known) {
                    Verdict::Call(call) if !ledger.answered.contains(&(call.name.clone(), self.canonical(&call))) => {
                        self.note("tool_call_in_text", "the whole reply was a tool call written as text; it was run");
                        calls.push(call);
                        content.clear();
                    }
                    Verdict::Call(_) => answer = Some(Err(BadReply::RepeatedCall)),
                    Verdict::Bad(bad) => answer = Some(Err(bad)),
                    // Unattended, a description of how the tools would be used is not an answer.
                    Verdict::Answer(text) if self.routine.is_some() && hygiene::describes_tool_use(&text, &known) => {
                        answer = Some(Err(BadReply::Plan))
                    }
                    Verdict::Answer(text) => answer = Some(Ok(text)),
                }
            }
            if let Some(answer) = answer {
                let last = iteration == self.opts.max_iterations;
                // A first reply that looked at nothing is a guess (`first_call: tool`).
                if iteration == 1 && !last && first.reask() {
                    self.note("first_call_reask", "the first reply called no tool; asked again for a tool call");
                    pending = Some(grounding::reask_message(lang, mode).to_string());
                    continue;
                }
                // The model's word that the task cannot be done ends the turn (`outcome.rs`).
                if let (Ok(text), Some(_)) = (&answer, &self.routine) {
                    self.declared_failure(text)?;
                }
                // Unattended, an answer may rest on a look that did not show the task's facts: it
                // goes back once per kind, with the tools (`grounding::SentBack::back`).
                if let (Ok(text), false, Some(routine)) = (&answer, last, &self.routine) {
                    let silent = routine.silent_token.as_deref().is_some_and(|t| text.trim() == t.trim());
                    sent.repath = named::repath(message, &calls_made, &ctx);
                    if let Some((kind, note, message)) =
                        sent.back(message, &calls_made, silent, lang).filter(|(kind, ..)| assists.allows(kind))
                    {
                        standing = Some((kind, text.clone()));
                        self.note(kind, note);
                        pending = Some(message);
                        look_again = true;
                        // Also after an answer from the evidence, where the tools were withheld:
                        // the message asks for a look.
                        (spent, withhold) = (Vec::new(), false);
                        continue;
                    }
                }
                // An answer that skipped the files the task names rests on something else.
                if let (Ok(text), false, false, true) = (&answer, last, named_sent, ledger.repeats < 2) {
                    if let Some(ask) = self.named_unused(message, &calls_made, &ctx, first, &specs) {
                        standing = Some(("named_files_reask", text.clone()));
                        named_sent = true;
                        pending = Some(ask);
                        look_again = true;
                        (spent, withhold) = (Vec::new(), false);
                        continue;
                    }
                }
                // An answer that claims a change no call made (`unchanged.rs`).
                if let (Ok(text), false, Some(routine)) = (&answer, last, &self.routine) {
                    let silent = routine.silent_token.as_deref().is_some_and(|t| text.trim() == t.trim());
                    if let Some((kind, note, message)) = sent
                        .unchanged_back(message, &calls_made, silent, lang)
                        .filter(|(kind, ..)| assists.allows(kind))
                    {
                        standing = Some((kind, text.clone()));
                        self.note(kind, note);
                        pending = Some(message);
                        look_again = true;
                        (spent, withhold) = (Vec::new(), false);
                        continue;
                    }
                }
                // A count or a pick answered in the turn over a result with records (the model
                // counts and compares badly; the evidence comes with the records the task asks
                // about selected, `select.rs`), or a task of several questions answered in the
                // turn (it answers the last one, `questions.rs`): the answer comes from the
                // evidence, once per turn.
                // A silence (a heartbeat's ok token too) has its own checks.
                let silence = |text: &str| {
                    self.routine
                        .as_ref()
                        .and_then(|r| r.silent_token.as_deref())
                        .is_some_and(|t| text.contains(t.trim()))
                };
                if let (Ok(text), false, false, true) = (&answer, last, answers_evidence, self.routine.is_some())
                    && !silence(text)
                {
                    let looked = calls_made.iter().any(|c| c.status == ToolStatus::Success);
                    // A count of commits that says the log's count has nothing to select.
                    let commits = super::capped::miscounted(message, &calls_made, text);
                    let why = if commits == Some(true) && assists.allows("commits_count_reask") {
                        Some(("commits_count_reask", "the turn answered a count of commits that is not the log's"))
                    } else if commits.is_none()
                        && assists.allows("records_selection_reask")
                        && super::select::reask(message, &calls_made, text)
                    {
                        Some(("records_selection_reask", "the turn answered a count or a pick over records itself"))
                    } else if assists.allows("difference_reask")
                        && super::difference::note(message, &calls_made, lang).is_some()
                    {
                        Some(("difference_reask", "the turn answered which lines of one list the other lacks itself"))
                    } else if assists.allows("newest_commit_reask")
                        && super::git_log::newest(message, &calls_made).is_some_and(|n| !n.named_in(text))
                    {
                        Some((
                            "newest_commit_reask",
                            "the turn answered about the last commit without naming the newest",
                        ))
                    } else if looked && assists.allows("questions_reask") && super::questions::count(message) >= 2 {
                        Some(("questions_reask", "the turn answered a task of several questions itself"))
                    } else if assists.allows("read_value_reask")
                        && super::read_value::contradicted(message, &calls_made, text)
                    {
                        Some((
                            "read_value_reask",
                            "the turn's answer gives what the task asks about another number than this run read",
                        ))
                    } else {
                        None
                    };
                    if let (false, Some((kind, why))) = (select_sent, why) {
                        select_sent = true;
                        standing = Some((kind, text.clone()));
                        self.note(kind, &format!("{why}; asked for the answer from the evidence"));
                        (withhold, from_evidence) = (true, true);
                        continue;
                    }
                }
                match answer {
                    Ok(text) => {
                        let text = if text == content.trim() {
                            content
                        } else {
                            self.note("reply_cleaned", "template tokens or reasoning were removed from the reply");
                            text
                        };
                        // A comparison of two numbers the answer states falsely (`false_comparison.rs`).
                        // And one about a limit that does not say the value (`value_stated.rs`).
                        let text = match &self.routine {
                            Some(r) => {
                                let silent = r.silent_token.as_deref().filter(|t| message.contains(t));
                                let text = self.compared_right(&request.messages, text, silent, &mut stats).await;
                                match silent {
                                    Some(t) if text.contains(t) => text,
                                    _ => {
                                        self.value_stated(message, &calls_made, &request.messages, text, &mut stats)
                                            .await
                                    }
                                }
                            }
                            None => text,
                        };
                        if let (Some(tx), false) = (tx, text_shown) {
                            let _ = tx.send(AgentEvent::TextDelta(text.clone()));
                        }
                        turn.push(Message { reasoning_content: reasoning, ..Message::assistant(text.clone()) });
                        reply = Some(text);
                        break;
                    }
                    Err(bad) if asked.is_some() => {
                        self.note(bad.note_kind(), bad.describe());
                        return Err(self.no_answer(bad, dropped.as_ref(), stats.iterations));
                    }
                    // Unattended, a reply that is no answer at the limit fails the turn.
                    Err(bad) if last && self.routine.is_some() => {
                        return Err(self.no_answer(bad, dropped.as_ref(), stats.iterations));
                    }
                    Err(_) if last => break,
                    // A reply that is no answer right after a failed call: the failure goes back
                    // (with the call that works when its result names one). The local model
                    // described a command in words after `logs/app.log` was not there and
                    // `app.log` was, and was then asked for an answer it had no result for
                    // (bench/README.md, stop 42).
                    Err(bad) if self.routine.is_some() && sent.failure_pending(&calls_made) => {
                        sent.repath = named::repath(message, &calls_made, &ctx);
                        if let Some((kind, note, message)) =
                            sent.failure_back(message, &calls_made, lang).filter(|(kind, ..)| assists.allows(kind))
                        {
                            self.note(kind, &format!("{}; {note}", bad.describe()));
                            pending = Some(message);
                            look_again = true;
                            (spent, withhold) = (Vec::new(), false);
                        }
                        continue;
                    }
                    Err(bad) => {
                        self.note(bad.note_kind(), &format!("{}; asked once more", bad.describe()));
                        asked = Some(bad);
                        withhold |= bad.withholds_tools();
                        from_evidence = bad.withholds_tools();
                        pending = Some(bad.request(lang).to_string());
                        continue;
                    }
                }
            }
            // Calls that all repeat calls already answered: the model has those results and is
            // stuck on them (small models make the same call again and again). They are recorded
            // but left out of the conversation, and the next request offers the other tools, or
            // none, with a word to go on.
            let repeats_only = !calls.is_empty()
                && calls.iter().all(|c| ledger.answered.contains(&(c.name.clone(), self.canonical(c))));
            if !repeats_only {
                // New calls are progress: a bad reply after them gets its own request again
                // (the iteration limit still bounds the turn).
                if !calls.is_empty() {
                    asked = None;
                }
                turn.push(Message {
                    role: Role::Assistant,
                    content: (!content.is_empty()).then(|| content.clone()),
                    tool_calls: calls.clone(),
                    tool_call_id: None,
                    reasoning_content: reasoning,
                    images: Vec::new(),
                });
                if !content.is_empty() {
                    last_text = content;
                }
            }
            for call in &calls {
                // A held write elsewhere made again goes to the file the task names (`holds.rs`).
                let redirected = self.redirected(message, call, &calls_made, &ctx);
                let call = redirected.as_ref().map_or(call, |(c, _)| c);
                let held =
                    self.hold(message, call, &calls_made, &ctx, (first, &specs), &mut held_sent, &mut stats).await;
                let (text, outcome) = match held {
                    Some(text) => {
                        // The model then announced the read in words instead of making it.
                        look_again = true;
                        if super::holds::stuck_on(call, &calls_made) && !withdrawn.contains(&call.name) {
                            self.note(
                                "write_held",
                                &format!(
                                    "{}: the held call made again; the next request offers the other tools",
                                    call.name
                                ),
                            );
                            withdrawn.push(call.name.clone());
                        }
                        self.record_held(call, &text)
                    }
                    None => {
                        let (mut text, outcome) = self.execute(call, &ctx, &mut ledger, status).await?;
                        if outcome == ToolStatus::Success {
                            withdrawn.clear();
                            if let Some((_, said)) = &redirected {
                                text = format!("{said} {text}");
                            }
                        }
                        (text, outcome)
                    }
                };
                stats.tool_calls += 1;
                self.last = stats;
                // What the next request has room for, as the turn's checks read it (`budget.rs`).
                let seen = self.within_budget(&system, &turn, &request.tools, call, &text).await;
                calls_made.push(CallRecord {
                    tool: call.name.clone(),
                    arguments: call.arguments.clone(),
                    status: outcome,
                    result: seen,
                });
                if !repeats_only {
                    turn.push(Message::tool_result(call.id.clone(), text));
                } else if !spent.contains(&call.name) {
                    spent.push(call.name.clone());
                }
            }
            let last = iteration == self.opts.max_iterations;
            // A model that repeats a failed call with nothing in hand is shown the failure once
            // more, and must call a tool: an answer now would rest on nothing.
            let can_ask = !last && ledger.repeats < 2 && !withhold;
            let stuck = match (repeats_only, can_ask && !sent.failure, &self.routine) {
                (true, true, Some(_)) if assists.allows("failed_check_reask") => {
                    grounding::repeated_failure(&calls_made, &|name| {
                        specs.iter().any(|t| t.name == name && self.acts(t))
                    })
                }
                _ => None,
            };
            if let Some(failure) = stuck {
                sent.failure = true;
                self.note("failed_check_reask", "the reply repeated a failed tool call; sent the failure back");
                pending = Some(grounding::failure_message(lang, &failure));
                look_again = true;
                spent.clear();
            } else if repeats_only {
                let rest = self.offered(&specs, &spent, &calls_made);
                // Only looking tools left: the model has looked; the answer comes from the evidence.
                withhold |= rest.is_empty() || (self.routine.is_some() && !rest.iter().any(|t| self.acts(t)));
                // About to answer: first the files the task names that no call has used, once.
                let named = match (withhold, !named_sent && !last && ledger.repeats < 2) {
                    (true, true) => self.named_unused(message, &calls_made, &ctx, first, &specs),
                    _ => None,
                };
                if let Some(ask) = named {
                    named_sent = true;
                    pending = Some(ask);
                    look_again = true;
                    (spent, withhold) = (Vec::new(), false);
                    continue;
                }
                from_evidence = withhold;
                self.note(
                    "repeated_call",
                    if withhold {
                        "the reply repeated a call already answered; asked for the final answer"
                    } else {
                        "the reply repeated a call already answered; offered the other tools"
                    },
                );
                // With every call failed there is nothing to answer from: the answer says so.
                let failed_all = !calls_made.iter().any(|c| c.status == ToolStatus::Success);
                pending = Some(grounding::repeat_message(lang, withhold, failed_all).to_string());
            } else if !last && self.looked_at_all(message, &calls, &calls_made, &ctx, first, &specs) {
                // The model would most often make the same call again before answering (a
                // 1.5B model did in half the tasks of an eval); the answer comes from the
                // evidence now, one request sooner.
                self.note("named_all_used", "the calls used everything the task names; asked for the final answer");
                (withhold, from_evidence) = (true, true);
            }
        }

        let reply = match reply {
            Some(r) => r,
            None => {
                stats.hit_iteration_limit = true;
                let note = limit_note(self.opts.language, self.opts.max_iterations);
                self.note("iteration_limit", &note);
                // Unattended, a turn the limit stopped has no answer (`outcome.rs`).
                if self.routine.is_some() {
                    self.last = stats;
                    return Err(self.still_calling(&calls_made));
                }
                let r = if last_text.is_empty() { note } else { format!("{last_text}\n\n{note}") };
                turn.push(Message::assistant(r.clone()));
                r
            }
        };
        // An answer over calls that all failed rests on nothing (`outcome.rs`).
        self.grounded(message, &specs, &calls_made)?;
        self.history.extend(turn);
        self.images.clear();
        history::trim(&mut self.history, self.opts.history_limit);
        self.last = stats;
        self.last_calls = calls_made;
        self.remember_turn(message, &reply);
        Ok(reply)
    }
}
