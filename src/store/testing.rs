//! The backends the store's tests run against: one case, run on SQLite and on PostgreSQL
//! (a fresh database of a real server per case, see `tests/common/postgres.rs`).

use std::path::Path;

use super::{DatabaseUrl, Store, StoreError};

#[path = "../../tests/common/postgres.rs"]
pub(crate) mod server;
// The test server's helpers, where `server` finds them as in `tests/common`.
#[allow(dead_code)]
#[path = "../../tests/common/os.rs"]
mod os;

/// Which backend a case runs on, for the assertion messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Sqlite,
    Postgres,
}

/// A fresh PostgreSQL store; with `data_dir`, runs are owned through locks in it.
pub(crate) fn postgres_store(data_dir: Option<&Path>) -> Store {
    let url = DatabaseUrl::parse("TEST", &server::fresh_database()).expect("test url");
    Store::open_postgres(&url, data_dir).expect("open PostgreSQL store")
}

/// Runs `case` against a fresh SQLite file in `dir` and a fresh PostgreSQL database, each
/// with the data folder `dir` (a new one per backend).
pub(crate) fn each_backend(case: impl Fn(Kind, &Path, Store)) {
    {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("routines.db")).expect("open SQLite store");
        case(Kind::Sqlite, dir.path(), store);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let store = postgres_store(Some(dir.path()));
    case(Kind::Postgres, dir.path(), store);
}

/// Runs a statement without parameters, written so both backends accept it.
pub(crate) fn execute(store: &Store, sql: &str) -> Result<(), StoreError> {
    match store.postgres() {
        Some(pg) => {
            let sql = sql.to_string();
            pg.call(move |c| async move {
                c.batch_execute(&sql).await?;
                Ok(())
            })
        }
        None => store.with_conn(|c| c.execute_batch(sql)),
    }
}

/// The number of rows of `table`.
pub(crate) fn count_rows(store: &Store, table: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM {table}");
    match store.postgres() {
        Some(pg) => pg.call(move |c| async move { Ok(c.query_one(&sql, &[]).await?.try_get(0)?) }),
        None => store.with_conn(|c| c.query_row(&sql, [], |r| r.get(0))),
    }
    .expect("count rows")
}

/// Every row of `sql`, each column as text (`None` for NULL), on either backend.
pub(crate) fn text_rows(store: &Store, sql: &str) -> Vec<Vec<Option<String>>> {
    let sql = sql.to_string();
    match store.postgres() {
        Some(pg) => pg.call(move |c| async move {
            let mut out = Vec::new();
            for message in c.simple_query(&sql).await? {
                if let tokio_postgres::SimpleQueryMessage::Row(row) = message {
                    out.push((0..row.len()).map(|i| row.get(i).map(str::to_string)).collect());
                }
            }
            Ok(out)
        }),
        None => store.with_conn(|c| {
            let mut stmt = c.prepare(&sql)?;
            let n = stmt.column_count();
            let rows = stmt.query_map([], |r| {
                (0..n)
                    .map(|i| {
                        Ok(match r.get::<_, rusqlite::types::Value>(i)? {
                            rusqlite::types::Value::Null => None,
                            rusqlite::types::Value::Integer(v) => Some(v.to_string()),
                            rusqlite::types::Value::Real(v) => Some(v.to_string()),
                            rusqlite::types::Value::Text(v) => Some(v),
                            rusqlite::types::Value::Blob(v) => Some(String::from_utf8_lossy(&v).into_owned()),
                        })
                    })
                    .collect::<rusqlite::Result<Vec<_>>>()
            })?;
            rows.collect()
        }),
    }
    .expect("query rows")
}

/// Opens the same database again, as another process would.
pub(crate) fn reopen(store: &Store, data_dir: &Path) -> Store {
    match store.postgres() {
        Some(pg) => Store::open_postgres(pg.url(), Some(data_dir)).expect("reopen PostgreSQL store"),
        None => Store::open(store.path().expect("SQLite path")).expect("reopen SQLite store"),
    }
}
