//! The label- and field-selector grammar as facts taken from upstream's selector tests
//! (apimachinery `pkg/labels` and `pkg/fields`): which selectors parse, into which
//! requirements, which label sets they match, and the exact error text of the ones that do not
//! parse. Each fact is checked twice: on the parser itself and on a real list over HTTPS, where
//! a selector that does not parse is a 400 `BadRequest` whose message is the parser's text.

mod support_kinds;
mod support_local;

use std::collections::{BTreeMap, BTreeSet};

use apiserver_framework::prelude::*;
use apiserver_framework::selector::{FieldSelector, LabelSelector, Operator, Requirement};
use apiserver_framework::server::GenericApiServer;
use serde_json::Value;
use support_kinds::{labelled, sized, sized_kind};
use support_local::{Local, start_local};

sized_kind!(WidgetSpec, "sel.example.com", "v1", "Widget");

const WIDGETS: &str = "/apis/sel.example.com/v1/namespaces/sel/widgets";

/// The texts upstream's validation puts after a failed pattern.
const LABEL_VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const LABEL_NAME_RULE: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const PREFIX_RULE: &str = "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const ONE_KEY_RULE: &str = "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
const BINARY_OPS: &str = "in, notin, =, ==, !=, gt, lt";

fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
    Requirement {
        key: key.to_string(),
        op,
        values: values.iter().map(|v| v.to_string()).collect(),
    }
}

/// Valid selectors and the requirements they parse into (sorted by key, set values sorted and
/// deduplicated, `()` being the one empty value).
fn valid_selectors() -> Vec<(&'static str, Vec<Requirement>)> {
    use Operator::*;
    vec![
        ("", vec![]),
        (" \t", vec![]),
        (
            "x=a,y=b,z=c",
            vec![
                req("x", Equals, &["a"]),
                req("y", Equals, &["b"]),
                req("z", Equals, &["c"]),
            ],
        ),
        (
            "x!=a,y=b",
            vec![req("x", NotEquals, &["a"]), req("y", Equals, &["b"])],
        ),
        ("x=", vec![req("x", Equals, &[""])]),
        ("x= ", vec![req("x", Equals, &[""])]),
        (
            "x=,z= ",
            vec![req("x", Equals, &[""]), req("z", Equals, &[""])],
        ),
        (
            "x= ,z= ",
            vec![req("x", Equals, &[""]), req("z", Equals, &[""])],
        ),
        ("x==y", vec![req("x", Equals, &["y"])]),
        ("!x", vec![req("x", DoesNotExist, &[])]),
        ("! x", vec![req("x", DoesNotExist, &[])]),
        ("x>1", vec![req("x", GreaterThan, &["1"])]),
        (
            "x>1,z<5",
            vec![req("x", GreaterThan, &["1"]), req("z", LessThan, &["5"])],
        ),
        ("x<7", vec![req("x", LessThan, &["7"])]),
        ("\rx", vec![req("x", Exists, &[])]),
        ("a ", vec![req("a", Exists, &[])]),
        (
            "this-is-a-dns.domain.com/key-with-dash",
            vec![req("this-is-a-dns.domain.com/key-with-dash", Exists, &[])],
        ),
        (
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
            vec![req(
                "this-is-another-dns.domain.com/key-with-dash",
                In,
                &["so", "what"],
            )],
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            vec![req(
                "0.1.2.domain/99",
                NotIn,
                &["10.10.100.1", "tick.tack.clock"],
            )],
        ),
        ("foo  in\t (abc)", vec![req("foo", In, &["abc"])]),
        ("x notin\n (abc)", vec![req("x", NotIn, &["abc"])]),
        (
            "x  notin\t\t\t(abc,def)",
            vec![req("x", NotIn, &["abc", "def"])],
        ),
        ("x in (abc,)", vec![req("x", In, &["", "abc"])]),
        ("x in (abc,abc)", vec![req("x", In, &["abc"])]),
        ("x in ()", vec![req("x", In, &[""])]),
        ("x in (a,,)", vec![req("x", In, &["", "a"])]),
        ("x in (a,,,,,,)", vec![req("x", In, &["", "a"])]),
        ("x in (a,,a,,a,,a,,)", vec![req("x", In, &["", "a"])]),
        ("x notin ( )", vec![req("x", NotIn, &[""])]),
        ("x notin (, a)", vec![req("x", NotIn, &["", "a"])]),
        (
            "x notin (abc,,def),bar,z in (),w",
            vec![
                req("bar", Exists, &[]),
                req("w", Exists, &[]),
                req("x", NotIn, &["", "abc", "def"]),
                req("z", In, &[""]),
            ],
        ),
        (
            "x,y in (a)",
            vec![req("x", Exists, &[]), req("y", In, &["a"])],
        ),
        (
            "x=a,y!=b,z in (h,i,j)",
            vec![
                req("x", Equals, &["a"]),
                req("y", NotEquals, &["b"]),
                req("z", In, &["h", "i", "j"]),
            ],
        ),
        // `in` and `notin` are plain words where a key or a value may stand.
        (
            "a in (x,y,notin, z,in)",
            vec![req("a", In, &["in", "notin", "x", "y", "z"])],
        ),
        ("notin=in", vec![req("notin", Equals, &["in"])]),
        ("in in (in)", vec![req("in", In, &["in"])]),
    ]
}

/// Selectors that do not parse, with upstream's message.
fn invalid_selectors() -> Vec<(String, String)> {
    let long = "a".repeat(254);
    let requirement = |m: &str| format!("unable to parse requirement: {m}");
    vec![
        // Structure: errors outside a requirement carry no prefix.
        (
            "x==a==b".into(),
            "found '==', expected: ',' or 'end of string'".into(),
        ),
        (
            "!x=a".into(),
            "found '=', expected: ',' or 'end of string'".into(),
        ),
        (
            "x,,y".into(),
            "found ',', expected: identifier after ','".into(),
        ),
        (
            ",x,y".into(),
            "found ',', expected: !, identifier, or 'end of string'".into(),
        ),
        (
            "a in (xyz),".into(),
            "found '', expected: identifier after ','".into(),
        ),
        (
            "a in (xyz)b notin ()".into(),
            "found 'b', expected: ',' or 'end of string'".into(),
        ),
        (
            "(".into(),
            "found '(', expected: !, identifier, or 'end of string'".into(),
        ),
        (
            "=x".into(),
            "found '=', expected: !, identifier, or 'end of string'".into(),
        ),
        (
            "!=x".into(),
            "found '!=', expected: !, identifier, or 'end of string'".into(),
        ),
        // Inside a requirement.
        (
            "x nott in (y)".into(),
            requirement(&format!("found 'nott', expected: {BINARY_OPS}")),
        ),
        (
            "x !".into(),
            requirement(&format!("found '!', expected: {BINARY_OPS}")),
        ),
        (
            "x exists".into(),
            requirement(&format!("found 'exists', expected: {BINARY_OPS}")),
        ),
        (
            "a (".into(),
            requirement(&format!("found '(', expected: {BINARY_OPS}")),
        ),
        (
            "a in (xyz abc)".into(),
            requirement("found 'abc', expected: ',' or ')'"),
        ),
        (
            "a in (b".into(),
            requirement("found '', expected: ',' or ')'"),
        ),
        (
            "a notin(".into(),
            requirement("found '', expected: ',', ')' or identifier"),
        ),
        (
            "a in (=)".into(),
            requirement("found '=', expected: ',', ')' or identifier"),
        ),
        (
            "a in (b,=)".into(),
            requirement("found '=', expected: ',', or identifier"),
        ),
        ("a in b".into(), requirement("found 'b' expected: '('")),
        (
            "x=(a)".into(),
            requirement("found '(', expected: identifier"),
        ),
        (
            "x=!y".into(),
            requirement("found '!', expected: identifier"),
        ),
        ("!!x".into(), requirement("found '!', expected: identifier")),
        ("!".into(), requirement("found '', expected: identifier")),
        // Values.
        (
            "x=a||y=b".into(),
            requirement(&format!(
                "values[0][x]: Invalid value: \"a||y\": {LABEL_VALUE_RULE}"
            )),
        ),
        (
            "x<a".into(),
            requirement(
                "values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer",
            ),
        ),
        (
            "x14>bar".into(),
            requirement(
                "values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer",
            ),
        ),
        (
            "x13>".into(),
            requirement(
                "values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer",
            ),
        ),
        (
            "x>a-".into(),
            requirement(&format!(
                "[values[0]: Invalid value: \"a-\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"a-\": {LABEL_VALUE_RULE}]"
            )),
        ),
        // An integer that is not a label value.
        (
            "x>-1".into(),
            requirement(&format!(
                "values[0][x]: Invalid value: \"-1\": {LABEL_VALUE_RULE}"
            )),
        ),
        (
            format!("x16={long}"),
            requirement(&format!(
                "values[0][x16]: Invalid value: \"{long}\": must be no more than 63 bytes"
            )),
        ),
        (
            "k in (ok,-bad)".into(),
            requirement(&format!(
                "values[0][k]: Invalid value: \"-bad\": {LABEL_VALUE_RULE}"
            )),
        ),
        (
            "k notin (-a,-b)".into(),
            requirement(&format!(
                "[values[0][k]: Invalid value: \"-a\": {LABEL_VALUE_RULE}, values[1][k]: Invalid value: \"-b\": {LABEL_VALUE_RULE}]"
            )),
        ),
        // Keys: checked without a field path, which upstream prints as `<nil>`.
        (
            long.clone(),
            requirement(&format!(
                "<nil>: Invalid value: \"{long}\": name part must be no more than 63 bytes"
            )),
        ),
        (
            "~".into(),
            requirement(&format!("<nil>: Invalid value: \"~\": {LABEL_NAME_RULE}")),
        ),
        (
            "-x=a".into(),
            requirement(&format!("<nil>: Invalid value: \"-x\": {LABEL_NAME_RULE}")),
        ),
        (
            "x/=a".into(),
            requirement(&format!(
                "<nil>: Invalid value: \"x/\": name part must be non-empty; {LABEL_NAME_RULE}"
            )),
        ),
        (
            "/x".into(),
            requirement("<nil>: Invalid value: \"/x\": prefix part must be non-empty"),
        ),
        (
            "Example.com/x".into(),
            requirement(&format!(
                "<nil>: Invalid value: \"Example.com/x\": {PREFIX_RULE}"
            )),
        ),
        (
            "a/b/c".into(),
            requirement(&format!("<nil>: Invalid value: \"a/b/c\": {ONE_KEY_RULE}")),
        ),
        (
            "!a\"b".into(),
            requirement(&format!(
                "<nil>: Invalid value: \"a\\\"b\": {LABEL_NAME_RULE}"
            )),
        ),
    ]
}

fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// (selector, labels, whether it matches), upstream's matching facts.
fn match_facts() -> Vec<(&'static str, BTreeMap<String, String>, bool)> {
    let foo_baz = set(&[("foo", "bar"), ("baz", "blah")]);
    vec![
        ("", set(&[("x", "y")]), true),
        ("x=y", set(&[("x", "y")]), true),
        ("x=y,z=w", set(&[("x", "y"), ("z", "w")]), true),
        ("x!=y,z!=w", set(&[("x", "z"), ("z", "a")]), true),
        ("notin=in", set(&[("notin", "in")]), true),
        ("x", set(&[("x", "z")]), true),
        ("!x", set(&[("y", "z")]), true),
        ("x>1", set(&[("x", "2")]), true),
        ("x<1", set(&[("x", "0")]), true),
        ("x=z", set(&[]), false),
        ("x=y", set(&[("x", "z")]), false),
        ("x=y,z=w", set(&[("x", "w"), ("z", "w")]), false),
        ("x!=y,z!=w", set(&[("x", "z"), ("z", "w")]), false),
        ("x", set(&[("y", "z")]), false),
        ("!x", set(&[("x", "z")]), false),
        ("x>1", set(&[("x", "0")]), false),
        ("x<1", set(&[("x", "2")]), false),
        ("foo=bar", foo_baz.clone(), true),
        ("baz=blah", foo_baz.clone(), true),
        ("foo=bar,baz=blah", foo_baz.clone(), true),
        ("foo=blah", foo_baz.clone(), false),
        ("baz=bar", foo_baz.clone(), false),
        ("foo=bar,foobar=bar,baz=blah", foo_baz, false),
        (
            "x in (foo),y notin (alpha)",
            set(&[("x", "foo"), ("y", "baz")]),
            true,
        ),
        (
            "x in (foo),y in (alpha)",
            set(&[("x", "foo"), ("y", "baz")]),
            false,
        ),
        ("x notin (),y", set(&[("y", "")]), true),
        ("!x,y", set(&[("y", "")]), true),
        ("x notin (),!y", set(&[("y", "")]), false),
        ("x in ()", set(&[("y", "baz")]), false),
        ("x in ()", set(&[("x", "")]), true),
        ("z>1", set(&[("z", "2")]), true),
        ("z>1", set(&[("z", "v2")]), false),
        ("z<1", set(&[("z", "1")]), false),
        ("x=", set(&[("x", "")]), true),
        ("x=", set(&[]), false),
        ("x!=", set(&[]), true),
    ]
}

#[test]
fn valid_selectors_parse_into_upstreams_requirements() {
    for (sel, want) in valid_selectors() {
        let got = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
        assert_eq!(got.requirements, want, "{sel:?}");
        assert_eq!(got.is_empty(), want.is_empty(), "{sel:?}");
    }
    // Parsing is deterministic: the order of requirements does not matter.
    assert_eq!(
        LabelSelector::parse("x=a,a=x").unwrap(),
        LabelSelector::parse("a=x,x=a").unwrap()
    );
}

#[test]
fn invalid_selectors_fail_with_upstreams_message() {
    for (sel, want) in invalid_selectors() {
        assert_eq!(LabelSelector::parse(&sel).map(|_| ()), Err(want), "{sel:?}");
    }
}

#[test]
fn selectors_match_upstreams_label_sets() {
    for (sel, labels, want) in match_facts() {
        let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
        assert_eq!(s.matches(&labels), want, "{sel:?} on {labels:?}");
    }
}

/// Field selectors that do not parse, with upstream's message.
fn invalid_field_selectors() -> Vec<(&'static str, &'static str)> {
    vec![
        // `=` is code point 61, printed as a number upstream.
        (
            "x=a||y=b",
            "invalid field selector: unescaped character in value: 61",
        ),
        (
            "x==a==b",
            "invalid field selector: unescaped character in value: 61",
        ),
        // Terms are sorted before they are read: `b` comes first.
        ("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'"),
        (
            "x in (a)",
            "invalid selector: 'x in (a)'; can't understand 'x in (a)'",
        ),
        (
            "x in (a,b,c)",
            "invalid selector: 'x in (a,b,c)'; can't understand 'b'",
        ),
        ("x", "invalid selector: 'x'; can't understand 'x'"),
        (" ", "invalid selector: ' '; can't understand ' '"),
        (
            r"k=\a",
            r"invalid field selector: invalid escape sequence: \a",
        ),
        (
            r"k=\",
            r"invalid field selector: invalid escape sequence: \",
        ),
        (
            r"k=\\\",
            r"invalid field selector: invalid escape sequence: \",
        ),
    ]
}

#[test]
fn field_selector_grammar() {
    for (sel, want) in [
        (
            "x=a,y=b,z=c",
            vec![("x", false, "a"), ("y", false, "b"), ("z", false, "c")],
        ),
        ("", vec![]),
        ("x!=a,y=b", vec![("x", true, "a"), ("y", false, "b")]),
        (r"x=a||y\=b", vec![("x", false, "a||y=b")]),
        (r"x=a\=\=b", vec![("x", false, "a==b")]),
        // Terms sort as bytes: `k2=` before `k=`.
        (r"k=\,,k2=v2", vec![("k2", false, "v2"), ("k", false, ",")]),
        (r"k=\\,k2=v2", vec![("k2", false, "v2"), ("k", false, "\\")]),
        ("b==v", vec![("b", false, "v")]),
        ("a=a,", vec![("a", false, "a")]),
        (",a=a", vec![("a", false, "a")]),
        (
            "함=수,목=록",
            vec![("목", false, "록"), ("함", false, "수")],
        ),
        // Nothing is trimmed.
        (" a = b", vec![(" a ", false, " b")]),
    ] {
        let got = FieldSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
        let got: Vec<(&str, bool, &str)> = got
            .requirements
            .iter()
            .map(|r| (r.field.as_str(), r.negated, r.value.as_str()))
            .collect();
        assert_eq!(got, want, "{sel:?}");
    }
    for (sel, want) in invalid_field_selectors() {
        assert_eq!(
            FieldSelector::parse(sel).map(|_| ()),
            Err(want.to_string()),
            "{sel:?}"
        );
    }
}

/// The local server of widgets (its client's fields through `Deref`).
type Server = Local;

impl Server {
    async fn start() -> Server {
        let app = GenericApiServer::builder("selectors")
            .group(Group::new("sel.example.com").resource::<Widget>())
            .build();
        start_local("selectors", app, &[]).await
    }

    async fn create(&self, name: &str, labels: &BTreeMap<String, String>) {
        let res = self
            .http
            .post(format!("{}{WIDGETS}", self.url))
            .bearer_auth(&self.token)
            .json(&labelled(
                sized("sel.example.com/v1", "Widget", name, 1),
                labels,
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 201, "{}", res.text().await.unwrap());
    }

    /// Lists with one query parameter; (status code, body).
    async fn list(&self, param: &str, value: &str) -> (u16, Value) {
        let res = self
            .http
            .get(format!("{}{WIDGETS}", self.url))
            .bearer_auth(&self.token)
            .query(&[(param, value)])
            .send()
            .await
            .unwrap();
        let code = res.status().as_u16();
        (code, res.json().await.unwrap())
    }

    async fn names(&self, param: &str, value: &str) -> BTreeSet<String> {
        let (code, body) = self.list(param, value).await;
        assert_eq!(code, 200, "{param}={value:?}: {body}");
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    }

    async fn bad_request(&self, param: &str, value: &str, message: &str) {
        let (code, body) = self.list(param, value).await;
        assert_eq!(code, 400, "{param}={value:?}: {body}");
        assert_eq!(body["kind"], "Status", "{body}");
        assert_eq!(body["status"], "Failure", "{body}");
        assert_eq!(body["reason"], "BadRequest", "{body}");
        assert_eq!(body["code"], 400, "{body}");
        assert_eq!(body["message"], message, "{param}={value:?}");
    }
}

#[tokio::test]
async fn selectors_over_https() {
    let server = Server::start().await;
    // One object per distinct label set of the matching facts.
    let facts = match_facts();
    let mut sets: Vec<BTreeMap<String, String>> = Vec::new();
    for (_, labels, _) in &facts {
        if !sets.contains(labels) {
            sets.push(labels.clone());
        }
    }
    for (i, labels) in sets.iter().enumerate() {
        server.create(&format!("o{i}"), labels).await;
    }
    let name_of = |labels: &BTreeMap<String, String>| {
        format!("o{}", sets.iter().position(|s| s == labels).unwrap())
    };

    for (sel, labels, want) in &facts {
        let names = server.names("labelSelector", sel).await;
        assert_eq!(
            names.contains(&name_of(labels)),
            *want,
            "{sel:?} on {labels:?}: got {names:?}"
        );
    }
    // Whole answers for a few selectors.
    let all: BTreeSet<String> = (0..sets.len()).map(|i| format!("o{i}")).collect();
    assert_eq!(server.names("labelSelector", "").await, all);
    assert_eq!(server.names("labelSelector", " ").await, all);
    let with_foo = BTreeSet::from([name_of(&set(&[("foo", "bar"), ("baz", "blah")]))]);
    assert_eq!(server.names("labelSelector", "foo").await, with_foo);
    assert_eq!(
        server.names("labelSelector", "foo in (bar, x), baz").await,
        with_foo
    );

    for (sel, message) in invalid_selectors() {
        server.bad_request("labelSelector", &sel, &message).await;
    }

    // Field selectors: the metadata fields every typed server supports.
    let o1 = BTreeSet::from(["o1".to_string()]);
    assert_eq!(server.names("fieldSelector", "metadata.name=o1").await, o1);
    assert_eq!(server.names("fieldSelector", "metadata.name==o1").await, o1);
    let not_o1: BTreeSet<String> = all.iter().filter(|n| *n != "o1").cloned().collect();
    assert_eq!(
        server.names("fieldSelector", "metadata.name!=o1").await,
        not_o1
    );
    assert_eq!(
        server
            .names("fieldSelector", "metadata.namespace=sel,metadata.name=o1")
            .await,
        o1
    );
    assert!(
        server
            .names("fieldSelector", "metadata.namespace=other")
            .await
            .is_empty()
    );
    assert!(
        server
            .names("fieldSelector", r"metadata.name=o1\,o2")
            .await
            .is_empty()
    );
    for (sel, message) in invalid_field_selectors() {
        server.bad_request("fieldSelector", sel, message).await;
    }
    // Fields the type does not select by are refused as upstream refuses them for a custom
    // resource, naming the first in sorted order.
    for (sel, field) in [
        ("spec.size=1", "spec.size"),
        ("metadata.name=o1,spec.size=1", "spec.size"),
        ("x=a,metadata.name=o1", "x"),
        ("metadata.name =o1", "metadata.name "),
        ("status.phase!=Running,spec.b=1", "spec.b"),
    ] {
        server
            .bad_request(
                "fieldSelector",
                sel,
                &format!("field label not supported: {field}"),
            )
            .await;
    }
}
