//! Cron syntax: parsing with croner (5 or 6 fields, `L W #`, macros) and
//! explaining, field by field, why an expression does not parse.

use croner::Cron;
use croner::parser::{CronParser, Seconds};

/// Parses 5- or 6-field cron (seconds optional), with `L`, `W`, `#` and
/// `@daily`-style macros. Day-of-month and day-of-week combine with OR, as
/// in Vixie cron.
pub fn parse_cron(expr: &str) -> Result<Cron, String> {
    CronParser::builder().seconds(Seconds::Optional).build().parse(expr).map_err(|e| e.to_string())
}

const CRON_FORMAT: &str = "5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or @hourly/@daily/@weekly/@monthly/@yearly";

/// Why `expr` does not parse (given croner's `error`), as a short reason and a
/// hint: which field is wrong and what it accepts.
pub fn explain_cron_error(expr: &str, error: &str) -> (String, String) {
    let expr = expr.trim();
    if let Some(name) = expr.strip_prefix('@') {
        return (
            format!("unknown shorthand `@{name}`"),
            "use @yearly, @annually, @monthly, @weekly, @daily or @hourly".into(),
        );
    }
    let fields: Vec<&str> = expr.split_whitespace().collect();
    let names: &[(&str, &str)] = match fields.len() {
        5 => &CRON_FIELDS[1..],
        6 => &CRON_FIELDS,
        0 => return ("the expression is empty".into(), CRON_FORMAT.into()),
        n => return (format!("it has {n} fields"), CRON_FORMAT.into()),
    };
    for (i, field) in fields.iter().enumerate() {
        let probe: Vec<&str> = (0..fields.len()).map(|j| if j == i { *field } else { "*" }).collect();
        if parse_cron(&probe.join(" ")).is_err() {
            let (name, accepts) = names[i];
            return (format!("the {name} field `{field}` is not valid"), format!("{name} takes {accepts}"));
        }
    }
    let why =
        error.strip_prefix("Component error: ").or_else(|| error.strip_prefix("Invalid pattern: ")).unwrap_or(error);
    (why.trim_end_matches('.').to_string(), CRON_FORMAT.into())
}

/// Name of each field of a 6-field expression and what it accepts.
const CRON_FIELDS: [(&str, &str); 6] = [
    ("second", "0-59, with `*`, `,`, `-` and `/`"),
    ("minute", "0-59, with `*`, `,`, `-` and `/`"),
    ("hour", "0-23, with `*`, `,`, `-` and `/`"),
    ("day-of-month", "1-31, with `*`, `,`, `-`, `/`, `L` and `W`"),
    ("month", "1-12 or JAN-DEC, with `*`, `,`, `-` and `/`"),
    ("day-of-week", "0-7 or SUN-SAT (0 and 7 are Sunday), with `*`, `,`, `-`, `/`, `L` and `#`"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_five_and_six_fields_and_macros() {
        assert!(parse_cron("0 9 * * 1-5").is_ok());
        assert!(parse_cron("30 0 9 * * 1-5").is_ok());
        assert!(parse_cron("@daily").is_ok());
        assert!(parse_cron("0 0 L * *").is_ok());
        assert!(parse_cron("0 0 * * 5#2").is_ok());
        assert!(parse_cron("61 * * * *").is_err());
        assert!(parse_cron("* * *").is_err());
    }

    #[test]
    fn explains_which_field_is_wrong() {
        let explain = |e: &str| {
            let err = parse_cron(e).unwrap_err();
            explain_cron_error(e, &err)
        };
        assert_eq!(explain("61 * * * *").0, "the minute field `61` is not valid");
        assert_eq!(explain("0 9 * 13 *").0, "the month field `13` is not valid");
        assert_eq!(explain("0 0 25 * * *").0, "the hour field `25` is not valid");
        assert_eq!(explain("* * *").0, "it has 3 fields");
        assert_eq!(explain("@fortnightly").0, "unknown shorthand `@fortnightly`");
    }
}
