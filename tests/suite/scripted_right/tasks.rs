//! The scripts: what a strong model replies to each task, read off the task's files.

use super::Step::{Call, Calls, Say};
use super::Task;

pub const TASKS: &[Task] = &[
    Task {
        name: "config-port",
        script: &[
            Call("file_read", r#"{"path": "config/app.toml"}"#),
            Say("The app listens on port 8420 (the [server] section of config/app.toml)."),
        ],
    },
    Task {
        name: "todo-next",
        script: &[
            Call("file_read", r#"{"path": "TODO.md"}"#),
            Say("The first unchecked item in TODO.md is: Rotate the staging API keys."),
        ],
    },
    Task {
        name: "count-lines",
        script: &[Call("shell", r#"{"command": "wc -l data/customers.csv"}"#), Say("data/customers.csv has 17 lines.")],
    },
    Task {
        name: "count-errors",
        script: &[
            Call("shell", r#"{"command": "grep -c ERROR logs/worker.log"}"#),
            Say("There are 3 ERROR lines in logs/worker.log."),
        ],
    },
    Task {
        name: "count-docs",
        script: &[
            Call("file_list", r#"{"path": "docs"}"#),
            Say("There are 3 Markdown files directly in docs: faq.md, install.md and usage.md."),
        ],
    },
    Task {
        name: "compare-prices",
        script: &[
            Calls(&[
                ("file_read", r#"{"path": "prices/october.csv"}"#),
                ("file_read", r#"{"path": "prices/november.csv"}"#),
            ]),
            Say("Only the Desk lamp changed its price: 24.00 in October, 27.50 in November."),
        ],
    },
    Task {
        name: "log-alert",
        script: &[
            Call("shell", r#"{"command": "grep ERROR logs/app.log"}"#),
            Say(
                "One error in logs/app.log:\n2026-11-23 06:17:03 ERROR payment provider unreachable: connection refused (stripe.internal:443)",
            ),
        ],
    },
    Task { name: "log-quiet", script: &[Call("file_read", r#"{"path": "logs/app.log"}"#), Say("NO_REPLY")] },
    Task { name: "services-up", script: &[Call("file_read", r#"{"path": "status/services.json"}"#), Say("ALL_UP")] },
    Task {
        name: "services-down",
        script: &[
            Call("file_read", r#"{"path": "status/services.json"}"#),
            Say("The payments service is down; its last error: 502 from upstream."),
        ],
    },
    Task {
        name: "config-host",
        script: &[
            Call("file_read", r#"{"path": "config/app.ini"}"#),
            Say("config/app.ini points to the database host db-prod-3.internal."),
        ],
    },
    Task {
        name: "json-admins",
        script: &[Call("file_read", r#"{"path": "users.json"}"#), Say("2 users are admins: Priya and Tomas.")],
    },
    Task {
        name: "count-timeouts",
        script: &[
            Call("shell", r#"{"command": "grep -c \"timed out\" logs/gateway.log"}"#),
            Say("5 requests timed out according to logs/gateway.log."),
        ],
    },
    Task {
        name: "count-open-todos",
        script: &[Call("file_read", r#"{"path": "TODO.md"}"#), Say("4 tasks in TODO.md are still open.")],
    },
    Task {
        name: "stock-least",
        script: &[
            Call("file_read", r#"{"path": "stock.csv"}"#),
            Say("Lyon has the least stock, with a quantity of 135."),
        ],
    },
    Task {
        name: "cpu-alert",
        script: &[Call("file_read", r#"{"path": "metrics/hosts.txt"}"#), Say("web-2 is using 97% CPU.")],
    },
    Task { name: "cpu-quiet", script: &[Call("file_read", r#"{"path": "metrics/hosts.txt"}"#), Say("NO_REPLY")] },
    Task {
        name: "cert-expiry",
        script: &[
            Call("file_read", r#"{"path": "certs/expiry.txt"}"#),
            Say("Warning: the certificate of api.example.com expires in 6 days."),
        ],
    },
    Task { name: "cert-quiet", script: &[Call("file_read", r#"{"path": "certs/expiry.txt"}"#), Say("NO_REPLY")] },
    Task {
        name: "count-warnings",
        script: &[
            Call("shell", r#"{"command": "grep -c WARN logs/worker.log"}"#),
            Say("There are 3 warnings in logs/worker.log."),
        ],
    },
    Task {
        name: "invoice-total",
        script: &[
            Call("file_read", r#"{"path": "invoices/november.csv"}"#),
            Say("The total of all amounts in invoices/november.csv is 2500."),
        ],
    },
    Task {
        name: "paid-total",
        script: &[
            Call("file_read", r#"{"path": "billing/invoices.csv"}"#),
            Say("The paid invoices (A-1, A-3, A-4) add up to 215."),
        ],
    },
    Task {
        name: "missing-packages",
        script: &[
            Call("file_read", r#"{"path": "requirements.txt"}"#),
            Call("file_read", r#"{"path": "installed.txt"}"#),
            Say("sqlalchemy and celery are listed in requirements.txt but not in installed.txt."),
        ],
    },
    Task {
        name: "users-no-2fa",
        script: &[
            Call("file_read", r#"{"path": "users.json"}"#),
            Say("ben and dara have two-factor authentication turned off."),
        ],
    },
    Task {
        name: "webhook-deploy",
        script: &[Say(
            "billing-api 3.8.1 was deployed to production and failed: the health check /healthz returned 503 after 3 attempts.",
        )],
    },
    Task { name: "webhook-alerts", script: &[Say("DiskAlmostFull on db-2\nCertificateExpiring on api-gw")] },
    Task {
        name: "git-last-change",
        script: &[
            Call("shell", r#"{"command": "git log -1 --stat"}"#),
            Say(
                "Farah Haddad made the most recent commit, \"Cache product images\"; it changed web/images.py and web/settings.py.",
            ),
        ],
    },
    Task {
        name: "git-yesterday",
        script: &[
            Call("shell", r#"{"command": "git log --since=\"24 hours ago\" --format=\"%an: %s\""}"#),
            Say("Chloe Martin: Fix rounding of VAT in invoices\nBen Okafor: Add gift card payments to checkout"),
        ],
    },
    Task {
        name: "memory-stock",
        script: &[
            Call("file_read", r#"{"path": "stock.txt"}"#),
            Call("memory_store", r#"{"key": "widgets", "content": "widgets: 40"}"#),
            Say("We have 40 widgets. There is no earlier count to compare with; I remembered 40 for next time."),
            Call("file_read", r#"{"path": "stock.txt"}"#),
            Call("memory_store", r#"{"key": "widgets", "content": "widgets: 35"}"#),
            Say("We have 35 widgets, 5 fewer than the 40 of the last check."),
        ],
    },
    Task {
        name: "memory-oncall",
        script: &[
            Call(
                "memory_store",
                r#"{"key": "oncall", "content": "The on-call engineer this week is Priya Nair, phone extension 4471."}"#,
            ),
            Say("Remembered: the on-call engineer this week is Priya Nair, extension 4471."),
            Call("memory_recall", r#"{"query": "on-call engineer"}"#),
            Say("The on-call engineer this week is Priya Nair, extension 4471."),
        ],
    },
    Task {
        name: "write-actions",
        script: &[
            Call("file_read", r#"{"path": "notes/meeting.md"}"#),
            Call(
                "file_write",
                r#"{"path": "actions.md", "content": "Ben: send the invoice to Acme by Friday\nChloe: order a bigger staging database instance\nAna: write the launch announcement\n"}"#,
            ),
            Say(
                "I wrote the 3 action items to actions.md: Ben (invoice to Acme), Chloe (bigger staging instance), Ana (launch announcement).",
            ),
        ],
    },
    Task {
        name: "fetch-status",
        script: &[
            Call("http_request", r#"{"url": "http://127.0.0.1:47811/status.json"}"#),
            Say(
                "The API is not operational: its status is degraded_performance, with the incident \"Slow API responses in eu-west\" under investigation.",
            ),
        ],
    },
    Task {
        name: "backup-quiet",
        script: &[Call("shell", r#"{"command": "grep failed var/backup.log"}"#), Say("NO_REPLY")],
    },
    Task { name: "disk-full-quiet", script: &[Call("file_read", r#"{"path": "reports/df.txt"}"#), Say("NO_REPLY")] },
    Task {
        name: "zh-disk-alert",
        script: &[Call("file_read", r#"{"path": "logs/disk.log"}"#), Say("当前磁盘使用率为 93%，超过了 90%。")],
    },
];
