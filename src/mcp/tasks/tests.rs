use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock};
use tokio::sync::oneshot;

use super::*;

fn settings(max_live: usize, results_bytes: usize) -> TaskSettings {
    TaskSettings {
        max_live,
        results_bytes,
        timeout: Duration::from_secs(60),
        store: None,
    }
}

/// A task whose work ends when the returned sender sends its result.
fn start(tasks: &Tasks, job: Job) -> (Snapshot, oneshot::Sender<CallToolResult>) {
    let (tx, rx) = oneshot::channel();
    let work = async move { rx.await.unwrap_or_else(|_| CallToolResult::success(vec![])) };
    let s = tasks
        .start("compute_histogram", None, job, Progress::new(), work)
        .unwrap();
    (s, tx)
}

fn text_result(text: &str) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

#[tokio::test]
async fn a_task_works_until_its_work_ends_then_holds_the_result() {
    let tasks = Tasks::new(settings(4, 1 << 20));
    let (s, tx) = start(&tasks, Job::new(None));
    assert!(matches!(s.outcome, Outcome::Working));
    assert_eq!(s.id.len(), 32);
    assert!(matches!(
        tasks.get(&s.id).unwrap().outcome,
        Outcome::Working
    ));
    tx.send(text_result("the answer")).unwrap();
    let ended = tasks.wait(&s.id).await.unwrap();
    let Outcome::Completed(result) = ended.outcome else {
        panic!("{:?}", ended.outcome)
    };
    assert_eq!(result["content"][0]["text"], "the answer");
    assert!(tasks.get("no-such-task").is_none());
}

#[tokio::test]
async fn a_cancelled_task_stops_its_job_and_stays_cancelled() {
    let tasks = Tasks::new(settings(4, 1 << 20));
    let job = Job::new(None);
    let (s, tx) = start(&tasks, job.clone());
    let Cancel::Done(cancelled) = tasks.cancel(&s.id) else {
        panic!("not cancelled")
    };
    assert!(matches!(cancelled.outcome, Outcome::Cancelled));
    assert!(job.is_stopped(), "the work's job was not cancelled");
    // The work answers anyway: the cancellation stands.
    tx.send(text_result("late")).unwrap();
    tokio::task::yield_now().await;
    let after = tasks.wait(&s.id).await.unwrap();
    assert!(matches!(after.outcome, Outcome::Cancelled));
    // Cancelling an ended task is refused, saying how it ended.
    assert!(matches!(tasks.cancel(&s.id), Cancel::Ended(_)));
    assert!(matches!(tasks.cancel("nope"), Cancel::NotFound));
}

#[tokio::test]
async fn running_tasks_are_capped_and_finished_ones_do_not_count() {
    let tasks = Tasks::new(settings(1, 1 << 20));
    let (first, tx) = start(&tasks, Job::new(None));
    let (never_tx, never) = oneshot::channel::<CallToolResult>();
    let refused = tasks.start(
        "compute_histogram",
        None,
        Job::new(None),
        Progress::new(),
        async move { never.await.unwrap() },
    );
    assert_eq!(refused.err(), Some(StartError::TooMany(1)));
    drop(never_tx);
    tx.send(text_result("done")).unwrap();
    tasks.wait(&first.id).await.unwrap();
    let (_second, _tx) = start(&tasks, Job::new(None));
}

#[tokio::test]
async fn results_over_their_budget_drop_the_oldest_finished_task() {
    // Room for about two small results.
    let tasks = Tasks::new(settings(8, 2 * (ENTRY_OVERHEAD_BYTES + 200)));
    let mut ids = Vec::new();
    for n in 0..3 {
        let (s, tx) = start(&tasks, Job::new(None));
        tx.send(text_result(&format!("result {n}"))).unwrap();
        tasks.wait(&s.id).await.unwrap();
        ids.push(s.id);
    }
    assert!(tasks.get(&ids[0]).is_none(), "the oldest result was kept");
    assert!(tasks.get(&ids[1]).is_some());
    assert!(tasks.get(&ids[2]).is_some());
}

#[tokio::test]
async fn tasks_list_in_pages_oldest_first() {
    let tasks = Tasks::new(settings(8, 1 << 20));
    let started: Vec<_> = (0..5).map(|_| start(&tasks, Job::new(None))).collect();
    let (page, next) = tasks.list(None, 2);
    let ids = |page: &[Snapshot]| page.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(&page),
        [started[0].0.id.clone(), started[1].0.id.clone()]
    );
    let (page, next) = tasks.list(next, 2);
    assert_eq!(
        ids(&page),
        [started[2].0.id.clone(), started[3].0.id.clone()]
    );
    let (page, next) = tasks.list(next, 2);
    assert_eq!(ids(&page), [started[4].0.id.clone()]);
    assert_eq!(next, None);
}

#[tokio::test]
async fn progress_reports_show_in_the_snapshot() {
    let tasks = Tasks::new(settings(8, 1 << 20));
    let progress = Progress::new();
    let (_tx, rx) = oneshot::channel::<CallToolResult>();
    let s = tasks
        .start(
            "compute_histogram",
            None,
            Job::new(None),
            progress.clone(),
            async move { rx.await.unwrap() },
        )
        .unwrap();
    assert_eq!(s.progress, None);
    progress.report(3, Some(12));
    let now = tasks.get(&s.id).unwrap();
    assert_eq!(now.progress, Some((3, Some(12))));
    assert!(wire::status_message(&now).contains("3 of 12 done (25%)"));
}

#[test]
fn task_ids_differ() {
    let ids: std::collections::HashSet<String> = (0..1000).map(|_| new_task_id()).collect();
    assert_eq!(ids.len(), 1000);
}
