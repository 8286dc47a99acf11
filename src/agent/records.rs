//! The records of one tool result, for the selection of `select.rs`: the objects of a JSON
//! list, the rows of a CSV table, or the lines of a text, each as the value a model-written
//! function receives and the one line a prompt shows; and the result again with only some of
//! them, written as it came.

use std::ops::Range;

use serde_json::{Map, Value};

use super::items;

/// The fewest records a result must have to be selected from (fewer, the model reads them well
/// enough; lines of text need more, as a short file is counted well and a selection that keeps
/// every line of it costs two requests for nothing), the most, and the most characters they may
/// take in the code request.
const MIN: usize = 3;
pub(super) const MIN_LINES: usize = 6;
const MAX: usize = 200;
const MAX_SHOWN: usize = 3_000;

/// What kind of text the records came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// Objects of a JSON list (the longest in the text).
    Json,
    /// Rows of a CSV file whose first line names the columns.
    Csv,
    /// Non-empty lines of any other text.
    Lines,
}

/// The records of a result.
#[derive(Debug, Clone)]
pub(super) struct Records<'a> {
    pub shape: Shape,
    /// Each record as the model's function receives it: an object (JSON, CSV: numbers parsed),
    /// or the line as a string.
    pub values: Vec<Value>,
    text: &'a str,
    /// Where each record is in `text`.
    ranges: Vec<Range<usize>>,
    /// The CSV header's line.
    frame: Range<usize>,
}

impl<'a> Records<'a> {
    /// The records of `text` (a tool result without the range line of a read), or `None` when
    /// it has fewer than three or more than the limits.
    #[cfg(test)]
    pub(super) fn of(text: &'a str) -> Option<Records<'a>> {
        Self::of_lines_from(text, MIN_LINES, true)
    }

    /// [`Records::of`], where a text of `min_lines` lines or more is records (a pick of the least
    /// or the most takes fewer lines than a count: the 1.5B model picked the wrong one of five),
    /// and a table of cells set apart by `|` is one only where `tables` says the text is a
    /// document (a file, a page): a command's `%an | %s` lines have no header line.
    pub(super) fn of_lines_from(text: &'a str, min_lines: usize, tables: bool) -> Option<Records<'a>> {
        let records = if serde_json::from_str::<Value>(text).is_ok() {
            json(text)?
        } else {
            csv(text).or_else(|| tables.then(|| pipe_table(text)).flatten()).or_else(|| lines(text))?
        };
        let min = if records.shape == Shape::Lines { min_lines.max(MIN) } else { MIN };
        (min..=MAX).contains(&records.values.len()).then_some(records)
    }

    /// How many records there are.
    pub(super) fn len(&self) -> usize {
        self.values.len()
    }

    /// The records as the code request shows them, one a line: the line itself, or the record as
    /// compact JSON. Lines that differ only in their digits are shown once (a log's thousand
    /// `INFO request ... 200 in 41ms` are one shape to write a test for). `None` when even so
    /// they take more than the request may show.
    pub(super) fn shown(&self) -> Option<String> {
        let mut seen: Vec<String> = Vec::new();
        let mut out: Vec<String> = Vec::new();
        for (value, range) in self.values.iter().zip(&self.ranges) {
            let line = match self.shape {
                Shape::Lines => self.text[range.clone()].trim().to_string(),
                Shape::Json | Shape::Csv => value.to_string(),
            };
            if self.shape == Shape::Lines {
                let mut shape = String::with_capacity(line.len());
                for c in line.chars() {
                    let digit = c.is_ascii_digit();
                    if !(digit && shape.ends_with('0')) {
                        shape.push(if digit { '0' } else { c });
                    }
                }
                if seen.contains(&shape) {
                    continue;
                }
                seen.push(shape);
            }
            out.push(line);
        }
        let text = out.join("\n");
        (text.len() <= MAX_SHOWN).then_some(text)
    }

    /// The text again with only the records whose flag is set, as it came: the JSON around the
    /// list, the CSV header, the lines in their order.
    pub(super) fn keep(&self, flags: &[bool]) -> String {
        let kept: Vec<&str> =
            self.ranges.iter().zip(flags).filter(|(_, f)| **f).map(|(r, _)| &self.text[r.clone()]).collect();
        match self.shape {
            Shape::Lines => kept.join("\n"),
            Shape::Csv => format!("{}\n{}", &self.text[self.frame.clone()], kept.join("\n")),
            Shape::Json => {
                let sep = match &self.ranges[..] {
                    [first, second, ..] => &self.text[first.end..second.start],
                    _ => ",",
                };
                // The white space after the `[` and before the `]` as the sender wrote it.
                let (first, last) = (self.ranges[0].start, self.ranges[self.ranges.len() - 1].end);
                format!("{}{}{}", &self.text[..first], kept.join(sep), &self.text[last..])
            }
        }
    }

    /// The text of record `i` on one line.
    pub(super) fn line(&self, i: usize) -> String {
        match self.shape {
            Shape::Json => items::compact(&self.text[self.ranges[i].clone()]),
            Shape::Csv | Shape::Lines => self.text[self.ranges[i].clone()].trim().to_string(),
        }
    }
}

/// The longest list of records of a JSON text.
fn json(text: &str) -> Option<Records<'_>> {
    let list = items::lists(text).into_iter().max_by_key(|l| l.items.len())?;
    let values =
        list.items.iter().map(|r| serde_json::from_str::<Value>(&text[r.clone()]).ok()).collect::<Option<Vec<_>>>()?;
    Some(Records { shape: Shape::Json, values, text, ranges: list.items, frame: 0..0 })
}

/// A CSV table: a header of two or more names, and rows with as many fields, none quoted (a
/// quoted field may hold the separator; such a table is read as lines).
fn csv(text: &str) -> Option<Records<'_>> {
    if text.contains('"') {
        return None;
    }
    let mut spans = line_spans(text);
    let header = spans.next()?;
    let names: Vec<&str> = text[header.clone()].split(',').map(str::trim).collect();
    let named = |n: &&str| !n.is_empty() && n.parse::<f64>().is_err();
    if names.len() < 2 || !names.iter().all(named) {
        return None;
    }
    let mut values = Vec::new();
    let mut ranges = Vec::new();
    for span in spans {
        let fields: Vec<&str> = text[span.clone()].split(',').map(str::trim).collect();
        if fields.len() != names.len() {
            return None;
        }
        let row: Map<String, Value> = names.iter().zip(fields).map(|(n, f)| (n.to_string(), scalar(f))).collect();
        values.push(Value::Object(row));
        ranges.push(span);
    }
    Some(Records { shape: Shape::Csv, values, text, ranges, frame: header })
}

/// The longest table of a text whose cells are set apart by `|` (a Markdown table, a page's
/// table as `http_request` renders it): consecutive lines with the same number of cells, two or
/// more, the first of them names (the header), a Markdown rule line (`|---|---|`) after it left
/// out, and at least [`MIN`] rows. Its rows are records with the header's names, as a CSV
/// table's are; the text around it is not.
fn pipe_table(text: &str) -> Option<Records<'_>> {
    let cells = |line: &str| -> Vec<String> {
        let line = line.trim();
        let inner = line.strip_prefix('|').unwrap_or(line);
        let inner = inner.strip_suffix('|').unwrap_or(inner);
        inner.split('|').map(|c| c.trim().to_string()).collect()
    };
    let rule = |c: &[String]| c.iter().all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')));
    // Every line with its span, empty lines too: a blank line ends a table.
    let mut at = 0;
    let spans: Vec<Range<usize>> = text
        .split_inclusive('\n')
        .map(|line| {
            let start = at;
            at += line.len();
            start..start + line.trim_end_matches(['\n', '\r']).len()
        })
        .collect();
    // The header's line, the rows' lines and the rows as objects.
    type Table = (Range<usize>, Vec<Range<usize>>, Vec<Value>);
    let mut best: Option<Table> = None;
    let mut i = 0;
    while i < spans.len() {
        let header = cells(&text[spans[i].clone()]);
        let named = |n: &String| !n.is_empty() && n.parse::<f64>().is_err();
        if !text[spans[i].clone()].contains('|') || header.len() < 2 || !header.iter().all(named) {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        let mut rows = Vec::new();
        let mut values = Vec::new();
        while j < spans.len() {
            let line = &text[spans[j].clone()];
            let row = cells(line);
            if !line.contains('|') || row.len() != header.len() {
                break;
            }
            if !(j == i + 1 && rule(&row)) {
                let object: Map<String, Value> = header.iter().zip(&row).map(|(n, f)| (n.clone(), scalar(f))).collect();
                values.push(Value::Object(object));
                rows.push(spans[j].clone());
            }
            j += 1;
        }
        if rows.len() >= MIN && best.as_ref().is_none_or(|(_, r, _)| rows.len() > r.len()) {
            best = Some((spans[i].clone(), rows, values));
        }
        i = j.max(i + 1);
    }
    let (frame, ranges, values) = best?;
    Some(Records { shape: Shape::Csv, values, text, ranges, frame })
}

/// The non-empty lines of a text.
fn lines(text: &str) -> Option<Records<'_>> {
    let ranges: Vec<Range<usize>> = line_spans(text).collect();
    let values = ranges.iter().map(|r| Value::String(text[r.clone()].trim().to_string())).collect();
    Some(Records { shape: Shape::Lines, values, text, ranges, frame: 0..0 })
}

/// The byte ranges of the non-empty lines of `text`, without their line ends.
fn line_spans(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut at = 0;
    text.split_inclusive('\n').filter_map(move |line| {
        let start = at;
        at += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        (!body.trim().is_empty()).then(|| start..start + body.len())
    })
}

/// A CSV field as a number when it is one, else as text.
fn scalar(field: &str) -> Value {
    if let Ok(n) = field.parse::<i64>() {
        return Value::from(n);
    }
    match field.parse::<f64>() {
        Ok(f) if f.is_finite() => Value::from(f),
        _ => Value::String(field.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csv_table_gives_rows_with_numbers_and_comes_back_with_its_header() {
        let text = "warehouse,quantity\nGdansk,290\nPorto,410\nLyon,135.5\n\nLeeds,220\n";
        let r = Records::of(text).unwrap();
        assert_eq!(r.shape, Shape::Csv);
        assert_eq!(r.len(), 4, "the blank line is no row");
        assert_eq!(r.values[2], serde_json::json!({"warehouse": "Lyon", "quantity": 135.5}));
        assert_eq!(r.values[0]["quantity"], 290);
        assert_eq!(r.keep(&[false, true, false, true]), "warehouse,quantity\nPorto,410\nLeeds,220");
        assert_eq!(r.line(2), "Lyon,135.5");
        assert_eq!(r.shown().unwrap().lines().next(), Some(r#"{"quantity":290,"warehouse":"Gdansk"}"#));
        // A row with another number of fields, a quoted field or a numeric header: lines instead.
        for odd in
            ["a,b\n1,2\n3\n4,5\n6,7\n8,9\n", "a,b\n\"x,y\",2\n3,4\n5,6\n7,8\n9,0\n", "1,2\n3,4\n5,6\n7,8\n9,0\n1,2\n"]
        {
            assert_eq!(Records::of(odd).unwrap().shape, Shape::Lines, "{odd}");
        }
    }

    #[test]
    fn a_table_of_cells_set_apart_by_bars_gives_rows_without_the_text_around_it() {
        let page = "Stock\n\nProduct | In stock\nBlue mug | 14\nRed kettle | 0\nGreen teapot | 3\nSteel spoon set | 0\n\nPrices without VAT.";
        let r = Records::of(page).unwrap();
        assert_eq!(r.shape, Shape::Csv);
        assert_eq!(r.values[1], serde_json::json!({"Product": "Red kettle", "In stock": 0}));
        assert_eq!(r.keep(&[false, true, false, true]), "Product | In stock\nRed kettle | 0\nSteel spoon set | 0");
        let markdown =
            "# Hosts\n\n| host | state |\n|------|-------|\n| web-1 | up |\n| web-2 | down |\n| db-1 | up |\n";
        let r = Records::of(markdown).unwrap();
        assert_eq!(r.len(), 3, "the rule line is no row");
        assert_eq!(r.values[1], serde_json::json!({"host": "web-2", "state": "down"}));
        assert!(Records::of("a | b\n1 | 2\n3 | 4\n").is_none(), "two rows are too few");
        let ragged = "x | y\n1 | 2\n3 | 4 | 5\n6 | 7\nline four\nline five\nline six\n";
        assert_eq!(Records::of(ragged).map(|r| r.shape), Some(Shape::Lines), "a row of another width ends it");
    }

    #[test]
    fn a_json_list_comes_back_around_its_kept_objects() {
        let text = "{\"users\": [\n  {\"name\": \"Priya\", \"role\": \"admin\"},\n  {\"name\": \"Mei\", \"role\": \"editor\"},\n  {\"name\": \"Tomas\", \"role\": \"admin\"}\n], \"n\": 3}";
        let r = Records::of(text).unwrap();
        assert_eq!(r.shape, Shape::Json);
        assert_eq!(r.values[1]["name"], "Mei");
        assert_eq!(
            r.keep(&[true, false, true]),
            "{\"users\": [\n  {\"name\": \"Priya\", \"role\": \"admin\"},\n  {\"name\": \"Tomas\", \"role\": \"admin\"}\n], \"n\": 3}"
        );
        assert_eq!(r.line(2), r#"{"name":"Tomas","role":"admin"}"#);
        assert!(Records::of(r#"{"port": 8080, "tags": ["a", "b", "c"]}"#).is_none(), "JSON without records");
    }

    #[test]
    fn lines_are_shown_once_per_shape_and_kept_in_order() {
        let log: String = (0..30)
            .map(|i| {
                if i % 10 == 3 {
                    format!("10:{i:02} WARN timed out\n")
                } else {
                    format!("10:{i:02} INFO ok in {i}ms\n")
                }
            })
            .collect();
        let r = Records::of(&log).unwrap();
        assert_eq!((r.shape, r.len()), (Shape::Lines, 30));
        assert_eq!(r.shown().unwrap(), "10:00 INFO ok in 0ms\n10:03 WARN timed out");
        let flags: Vec<bool> = (0..30).map(|i| i % 10 == 3).collect();
        assert_eq!(r.keep(&flags), "10:03 WARN timed out\n10:13 WARN timed out\n10:23 WARN timed out");
        assert!(Records::of("one\n\ntwo\nthree\nfour\nfive\n").is_none(), "five lines are too few");
        let long: String = (0..100).map(|i| format!("{} {i}\n", "word ".repeat(i))).collect();
        assert!(Records::of(&long).unwrap().shown().is_none(), "too much to show");
    }
}
