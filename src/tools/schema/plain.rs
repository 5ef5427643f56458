//! Plain schemas: the few keywords crew's own tools use (`type`, `properties`, `required`,
//! `additionalProperties: false`, `items`, string `enum`s, integer bounds, string lengths),
//! checked by walking the schema itself. The general validator has to build the validator
//! of the JSON Schema 2020-12 meta-schema before its first compile: 10 ms and 10 MiB that a
//! session of only plain schemas never needs. A schema with anything else, or with a
//! keyword not shaped as the meta-schema demands, is not plain and goes to the general
//! validator, which also reports it when it is invalid. The errors, their order and their
//! texts are the general validator's (the tests compare the two on generated schemas).

use std::fmt::Write;

use serde_json::{Map, Value};

/// One violation: the JSON pointer of the offending value, and what is wrong with it.
pub(super) type Violation = (String, String);

/// The names of JSON types, in the order the general validator lists them.
const TYPES: [&str; 7] = [
    "array", "boolean", "integer", "null", "number", "object", "string",
];

/// The largest integer bound taken (beyond it, comparing with a float is not exact).
const EXACT: i128 = 1 << 53;

/// Whether `schema` is plain: an object schema using only the keywords above, each well
/// formed, all the way down.
pub(crate) fn is_plain(schema: &Value) -> bool {
    let Value::Object(map) = schema else {
        return false;
    };
    map.iter().all(|(keyword, value)| match keyword.as_str() {
        "type" => match value {
            Value::String(t) => TYPES.contains(&t.as_str()),
            Value::Array(ts) => {
                !ts.is_empty()
                    && ts.iter().enumerate().all(|(i, t)| {
                        t.as_str().is_some_and(|t| TYPES.contains(&t)) && !ts[..i].contains(t)
                    })
            }
            _ => false,
        },
        "properties" => value
            .as_object()
            .is_some_and(|props| props.values().all(is_plain)),
        "additionalProperties" => value.is_boolean(),
        "required" => value.as_array().is_some_and(|names| {
            names
                .iter()
                .enumerate()
                .all(|(i, n)| n.is_string() && !names[..i].contains(n))
        }),
        "items" => is_plain(value),
        "enum" => value
            .as_array()
            .is_some_and(|options| options.iter().all(Value::is_string)),
        "minimum" | "maximum" => integer(value).is_some_and(|n| n.abs() <= EXACT),
        "minLength" | "maxLength" => value.is_u64(),
        "description" | "title" => value.is_string(),
        "default" => true,
        "examples" => value.is_array(),
        _ => false,
    })
}

/// Every violation of the plain `schema` by `instance`, in the general validator's order.
pub(super) fn violations(schema: &Value, instance: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    check(schema, instance, "", &mut out);
    out
}

fn check(schema: &Value, instance: &Value, at: &str, out: &mut Vec<Violation>) {
    let Value::Object(map) = schema else { return };
    let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
    // Keywords in the schema's key order, as the general validator compiles them.
    for (keyword, value) in map {
        let message = match keyword.as_str() {
            "type" => mistyped(value, instance),
            "properties" if !closed => {
                if let (Value::Object(props), Value::Object(given)) = (value, instance) {
                    for (name, sub) in props {
                        if let Some(v) = given.get(name) {
                            check(sub, v, &pointer(at, name), out);
                        }
                    }
                }
                None
            }
            "additionalProperties" if closed => instance
                .as_object()
                .and_then(|given| unexpected(map.get("properties"), given, at, out)),
            "required" => {
                if let (Value::Array(names), Value::Object(given)) = (value, instance) {
                    for name in names {
                        if name.as_str().is_some_and(|n| !given.contains_key(n)) {
                            out.push((at.to_string(), format!("{name} is a required property")));
                        }
                    }
                }
                None
            }
            "items" => {
                if let Value::Array(items) = instance {
                    for (i, item) in items.iter().enumerate() {
                        check(value, item, &pointer(at, &i.to_string()), out);
                    }
                }
                None
            }
            "enum" => not_one_of(value, instance),
            "minimum" => beyond(value, instance, std::cmp::Ordering::Less)
                .then(|| format!("{instance} is less than the minimum of {value}")),
            "maximum" => beyond(value, instance, std::cmp::Ordering::Greater)
                .then(|| format!("{instance} is greater than the maximum of {value}")),
            "minLength" => length(value, instance, |n, limit| n < limit).map(|limit| {
                format!(
                    "{instance} is shorter than {limit} character{}",
                    plural(limit)
                )
            }),
            "maxLength" => length(value, instance, |n, limit| n > limit).map(|limit| {
                format!(
                    "{instance} is longer than {limit} character{}",
                    plural(limit)
                )
            }),
            _ => None,
        };
        if let Some(message) = message {
            out.push((at.to_string(), message));
        }
    }
}

/// `additionalProperties: false`: each given property is checked against its schema, in
/// the instance's order, and the ones no schema names are reported together after them.
fn unexpected(
    props: Option<&Value>,
    given: &Map<String, Value>,
    at: &str,
    out: &mut Vec<Violation>,
) -> Option<String> {
    let props = props.and_then(Value::as_object);
    let mut extra = Vec::new();
    for (name, v) in given {
        match props.and_then(|p| p.get(name)) {
            Some(sub) => check(sub, v, &pointer(at, name), out),
            None => extra.push(name.as_str()),
        }
    }
    if extra.is_empty() {
        return None;
    }
    let mut message = String::from("Additional properties are not allowed (");
    for (i, name) in extra.iter().enumerate() {
        let _ = write!(message, "{}'{name}'", if i == 0 { "" } else { ", " });
    }
    message.push_str(if extra.len() == 1 {
        " was unexpected)"
    } else {
        " were unexpected)"
    });
    Some(message)
}

fn mistyped(types: &Value, instance: &Value) -> Option<String> {
    // A float with no fraction is an integer for `"type": "integer"` but not for a list
    // of types: so the general validator has it, and the tools were written against it.
    let whole_float = matches!(types, Value::String(_));
    let fits = |t: &str| match t {
        "array" => instance.is_array(),
        "boolean" => instance.is_boolean(),
        "integer" => instance.as_number().is_some_and(|n| {
            n.is_u64()
                || n.is_i64()
                || (whole_float && n.as_f64().is_some_and(|f| f.fract() == 0.0))
        }),
        "null" => instance.is_null(),
        "number" => instance.is_number(),
        "object" => instance.is_object(),
        _ => instance.is_string(),
    };
    match types {
        Value::String(t) if !fits(t) => Some(format!("{instance} is not of type \"{t}\"")),
        // One type in a list is said as one type.
        Value::Array(ts) if ts.len() == 1 => mistyped(&ts[0], instance),
        Value::Array(ts) if !ts.iter().filter_map(Value::as_str).any(fits) => {
            let mut message = format!("{instance} is not of types ");
            // Listed in the validator's own order of types, not the schema's.
            let named = TYPES.iter().filter(|t| ts.iter().any(|s| s == **t));
            for (i, t) in named.enumerate() {
                let _ = write!(message, "{}\"{t}\"", if i == 0 { "" } else { ", " });
            }
            Some(message)
        }
        _ => None,
    }
}

fn not_one_of(options: &Value, instance: &Value) -> Option<String> {
    let options = options.as_array()?;
    if options.contains(instance) {
        return None;
    }
    let mut message = format!("{instance} is not one of ");
    if options.len() <= 3 {
        for (i, o) in options.iter().enumerate() {
            let sep = match i {
                0 => "",
                _ if i == options.len() - 1 => " or ",
                _ => ", ",
            };
            let _ = write!(message, "{sep}{o}");
        }
    } else {
        let _ = write!(
            message,
            "{}, {} or {} other candidates",
            options[0],
            options[1],
            options.len() - 2
        );
    }
    Some(message)
}

/// Whether the number `instance` lies on the `side` of the integer bound `limit`.
fn beyond(limit: &Value, instance: &Value, side: std::cmp::Ordering) -> bool {
    let (Some(limit), Some(n)) = (integer(limit), instance.as_number()) else {
        return false;
    };
    let order = match n.as_i128() {
        Some(n) => n.cmp(&limit),
        // A float: the bound is exact as a float (see `EXACT`).
        None => match n.as_f64().and_then(|f| f.partial_cmp(&(limit as f64))) {
            Some(order) => order,
            None => return false,
        },
    };
    order == side
}

fn length(limit: &Value, instance: &Value, broken: fn(u64, u64) -> bool) -> Option<u64> {
    let (limit, text) = (limit.as_u64()?, instance.as_str()?);
    broken(text.chars().count() as u64, limit).then_some(limit)
}

fn integer(value: &Value) -> Option<i128> {
    value.as_number().and_then(serde_json::Number::as_i128)
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `at` with the segment `name` appended, escaped as JSON pointers are.
fn pointer(at: &str, name: &str) -> String {
    let mut p = String::with_capacity(at.len() + name.len() + 1);
    p.push_str(at);
    p.push('/');
    for c in name.chars() {
        match c {
            '~' => p.push_str("~0"),
            '/' => p.push_str("~1"),
            c => p.push(c),
        }
    }
    p
}

#[cfg(test)]
#[path = "plain_tests.rs"]
mod tests;
