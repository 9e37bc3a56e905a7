use super::*;
use std::path::PathBuf;

fn file(name: &str) -> (Arc<Db>, PathBuf) {
    let dir = std::env::temp_dir().join(format!("sbapi-outbox-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Db::new(&dir.join("state.sqlite")).with_busy_timeout(Duration::from_millis(50));
    (Arc::new(db), dir)
}

fn outbox(db: &Arc<Db>, jobs: &[&str]) -> SqliteOutbox {
    let keys: Vec<(String, Vec<u8>)> = jobs
        .iter()
        .map(|j| ((*j).to_owned(), format!("secret of {j}").into_bytes()))
        .collect();
    SqliteOutbox::new(Arc::clone(db), &keys)
}

fn delivery(id: char, job: &str, due: u64) -> Delivery {
    Delivery {
        id: format!("msg_{}", id.to_string().repeat(32)),
        job: job.into(),
        body: "{}".into(),
        attempts: 0,
        next_at_ms: due,
        created_ms: super::super::super::now_ms(),
    }
}

#[tokio::test]
async fn a_row_inserted_by_hand_is_never_posted() {
    let (db, dir) = file("forged");
    let outbox = outbox(&db, &["trip"]);
    assert_eq!(outbox.add(&delivery('a', "trip", 0)).await, Ok(true));
    // Someone with write access to the file adds a well-formed delivery.
    let forged = delivery('b', "trip", 0);
    let value = serde_json::to_vec(&forged).unwrap();
    db.with(|c| {
        c.execute(
            "INSERT INTO watch_outbox (id, job, due_ms, created_ms, bytes, value, seal) VALUES (?1, 'trip', 0, 0, 2, ?2, x'00')",
            params![forged.id, value],
        )
    })
    .unwrap();
    let pending = outbox.pending(10).await.expect("read");
    let ids: Vec<&str> = pending.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, vec![delivery('a', "trip", 0).id.as_str()]);
    assert_eq!(outbox.count().await, Ok(1), "the forged row is deleted");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn deliveries_are_read_by_due_time() {
    let (db, dir) = file("due");
    let outbox = outbox(&db, &["dead", "live"]);
    // A dead receiver's deliveries, backed off for an hour, added first.
    for (i, id) in ['1', '2', '3', '4'].iter().enumerate() {
        let mut d = delivery(*id, "dead", 3_600_000 + i as u64);
        d.next_at_ms += super::super::super::now_ms();
        assert_eq!(outbox.add(&d).await, Ok(true));
    }
    assert_eq!(outbox.add(&delivery('a', "live", 5)).await, Ok(true));
    let first = outbox.pending(2).await.expect("read");
    assert_eq!(first[0].job, "live", "{first:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_job_this_process_does_not_know_is_left_alone() {
    let (db, dir) = file("unknown");
    let new_config = outbox(&db, &["plan", "trip"]);
    assert_eq!(new_config.add(&delivery('e', "plan", 0)).await, Ok(true));
    // The process of the older configuration, without `plan`.
    let old_config = outbox(&db, &["trip"]);
    assert_eq!(old_config.pending(10).await, Ok(vec![]));
    assert_eq!(
        old_config.get("plan", &delivery('e', "plan", 0).id).await,
        Ok(None)
    );
    assert_eq!(old_config.count().await, Ok(1), "not deleted");
    let kept = new_config.pending(10).await.expect("read");
    assert_eq!(kept.len(), 1);
    // Past the age bound, a job nobody knows is dropped.
    db.with(|c| c.execute("UPDATE watch_outbox SET created_ms = 0", []))
        .unwrap();
    assert_eq!(outbox(&db, &["trip"]).pending(10).await, Ok(vec![]));
    assert_eq!(old_config.count().await, Ok(0));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_locked_file_is_unavailable_and_loses_nothing() {
    let (db, dir) = file("locked");
    let outbox = outbox(&db, &["trip"]);
    assert_eq!(outbox.add(&delivery('a', "trip", 0)).await, Ok(true));
    // Another process writes: this one's writes wait, then fail.
    let writer = Connection::open(db.path()).unwrap();
    writer
        .execute_batch("BEGIN IMMEDIATE; DELETE FROM watch_leases;")
        .unwrap();
    let mut later = delivery('a', "trip", 0);
    later.attempts = 1;
    assert_eq!(outbox.update(&later).await, Err(Unavailable));
    assert_eq!(
        outbox.add(&delivery('b', "trip", 0)).await,
        Err(Unavailable)
    );
    drop(writer);
    // A restart that finds the file locked by another process.
    db.close();
    let holder = Connection::open(db.path()).unwrap();
    holder
        .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;")
        .unwrap();
    assert_eq!(outbox.pending(10).await, Err(Unavailable));
    assert_eq!(outbox.state("trip", "b").await, Err(Unavailable));
    assert_eq!(
        outbox.get("trip", &delivery('a', "trip", 0).id).await,
        Err(Unavailable)
    );
    drop(holder);
    assert_eq!(outbox.pending(10).await.map(|p| p.len()), Ok(1));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn leases_hold_across_processes_sharing_the_file() {
    let (db, dir) = file("leases");
    let (old, new) = (outbox(&db, &["trip"]), outbox(&db, &["trip"]));
    let held = old
        .lease("run:trip", Duration::from_secs(60))
        .await
        .expect("free");
    assert!(new
        .lease("run:trip", Duration::from_secs(60))
        .await
        .is_none());
    assert_eq!(old.renew(&held, Duration::from_secs(60)).await, Ok(true));
    let stolen = Lease {
        name: held.name.clone(),
        token: "another".into(),
    };
    assert_eq!(new.renew(&stolen, Duration::from_secs(60)).await, Ok(false));
    new.release(&stolen).await;
    assert!(new
        .lease("run:trip", Duration::from_secs(60))
        .await
        .is_none());
    old.release(&held).await;
    assert!(new
        .lease("run:trip", Duration::from_secs(60))
        .await
        .is_some());
    // A lease claiming far more than its life (written by hand) is absent.
    db.with(|c| c.execute("UPDATE watch_leases SET until_ms = 9000000000000000", []))
        .unwrap();
    assert!(old
        .lease("run:trip", Duration::from_secs(60))
        .await
        .is_some());
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn bounded_by_bytes() {
    let (db, dir) = file("bytes");
    let outbox = outbox(&db, &["trip"]);
    let mut big = delivery('a', "trip", 0);
    big.body = "x".repeat(MAX_PENDING_BYTES / 2);
    assert_eq!(outbox.add(&big).await, Ok(true));
    big.id = delivery('b', "trip", 0).id;
    assert_eq!(outbox.add(&big).await, Ok(false), "past the byte bound");
    assert_eq!(outbox.add(&delivery('c', "trip", 0)).await, Ok(true));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn an_earlier_versions_rows_move_to_the_sealed_tables() {
    let (db, dir) = file("migrate");
    let old = delivery('a', "trip", 0);
    let state = JobState {
        version: "0".repeat(32),
        seq: 3,
        last_run_ms: 1,
        last_change_ms: Some(1),
        queued: None,
    };
    db.with(|c| {
        c.execute_batch(
            "CREATE TABLE watch_state (job TEXT NOT NULL, board TEXT NOT NULL, value BLOB NOT NULL, PRIMARY KEY (job, board));
             CREATE TABLE watch_deliveries (id TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL);",
        )?;
        c.execute(
            "INSERT INTO watch_deliveries (id, value) VALUES (?1, ?2)",
            params![old.id, serde_json::to_vec(&old).unwrap()],
        )?;
        c.execute(
            "INSERT INTO watch_deliveries (id, value) VALUES ('msg_x', 'not ours')",
            [],
        )?;
        c.execute(
            "INSERT INTO watch_state (job, board, value) VALUES ('trip', 'b', ?1)",
            [serde_json::to_vec(&state).unwrap()],
        )
    })
    .unwrap();
    let outbox = outbox(&db, &["trip"]);
    assert_eq!(outbox.pending(10).await, Ok(vec![old.clone()]));
    assert_eq!(outbox.state("trip", "b").await, Ok(Some(state)));
    let tables: i64 = db
        .with(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('watch_state', 'watch_deliveries')",
                [],
                |r| r.get(0),
            )
        })
        .unwrap();
    assert_eq!(tables, 0, "the old tables are gone once moved");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn what_is_pending_survives_a_restart_and_states_are_sealed() {
    let (db, dir) = file("restart");
    let first = outbox(&db, &["trip"]);
    let state = JobState {
        version: "1".repeat(32),
        seq: 1,
        last_run_ms: 1,
        last_change_ms: None,
        queued: None,
    };
    first.set_state("trip", "b", &state).await.expect("stored");
    assert_eq!(first.add(&delivery('a', "trip", 0)).await, Ok(true));
    drop(first);
    let path = db.path().to_owned();
    drop(db);
    let db = Arc::new(Db::new(&path));
    let again = outbox(&db, &["trip"]);
    assert_eq!(again.state("trip", "b").await, Ok(Some(state.clone())));
    assert_eq!(again.pending(10).await.map(|p| p.len()), Ok(1));
    // A state rewritten by hand does not check: not ours, deleted.
    db.with(|c| {
        c.execute(
            "UPDATE watch_jobs SET value = replace(value, '\"seq\":1', '\"seq\":9')",
            [],
        )
    })
    .unwrap();
    assert_eq!(again.state("trip", "b").await, Ok(None));
    let _ = std::fs::remove_dir_all(dir);
}
