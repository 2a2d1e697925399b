//! One request of the corpus, as data: who sends it, the method, the path with its query, the
//! headers and the body, what to remember of its answer, and how to read that answer.

use serde_json::Value;

use super::answer::Answer;

/// Who sends a request: a user of the dev host's token file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Identity {
    /// `admin`, in `system:masters`.
    Admin,
    /// `bob`, in `viewers`: may read flunders in `default`, nothing more.
    Bob,
    /// No credentials.
    Anonymous,
}

/// The part of an answer's body that is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// The whole body.
    Whole,
    /// An OpenAPI document (v2 or v3): the structure of the wardle group's paths and schemas
    /// (see `openapi.rs`; the meta and core definitions follow each server's Kubernetes
    /// libraries, not the server).
    OpenApiWardle,
    /// The status code and headers only (the body is a large document compared elsewhere).
    NoBody,
}

/// One request of the corpus. Paths, header values and bodies may name a value remembered from
/// an earlier answer as `{name}`; each target substitutes its own value.
#[derive(Clone, Debug)]
pub struct Request {
    /// What the request checks, unique in the corpus (differences name it).
    pub name: String,
    /// Who sends it.
    pub identity: Identity,
    /// The HTTP method.
    pub method: reqwest::Method,
    /// The path and the query.
    pub path: String,
    /// Request headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body, with its content type set in `headers`.
    pub body: Option<Vec<u8>>,
    /// Values of the answer to remember: (name, JSON pointer into the answer's body).
    pub captures: Vec<(String, String)>,
    /// What of the body is compared.
    pub view: View,
    /// A condition to wait for: the request is sent again (to each target on its own) until its
    /// answer meets it, and the answer that does is compared.
    pub until: Option<fn(&Answer) -> bool>,
    /// Before it is sent, each target's store is compacted to its current revision and its
    /// server restarted (see `Targets::compact_and_restart`).
    pub compact_first: bool,
    /// A request (the admin's, with a body) held in flight so many times at once while this
    /// one is sent: each copy's body is sent but for its last byte, so that the server has
    /// admitted it and waits in its handler; the last bytes are sent once this request is
    /// answered (see `Target::hold`).
    pub while_held: Option<(Box<Request>, usize)>,
    /// Sent to the target's dev host instead of the server: the host's objects the server reads
    /// (admission policies and their parameters).
    pub to_host: bool,
}

impl Request {
    /// A request of `method` to `path` as the admin, without a body.
    pub fn new(name: impl Into<String>, method: reqwest::Method, path: impl Into<String>) -> Self {
        Request {
            name: name.into(),
            identity: Identity::Admin,
            method,
            path: path.into(),
            headers: Vec::new(),
            body: None,
            captures: Vec::new(),
            view: View::Whole,
            until: None,
            compact_first: false,
            while_held: None,
            to_host: false,
        }
    }

    /// Sent by `identity`.
    pub fn by(mut self, identity: Identity) -> Self {
        self.identity = identity;
        self
    }

    /// With the header `name: value`.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_string(), value.into()));
        self
    }

    /// With `Accept: accept`.
    pub fn accept(self, accept: &str) -> Self {
        self.header("Accept", accept)
    }

    /// With a JSON body.
    pub fn json(self, body: Value) -> Self {
        self.body_of("application/json", body.to_string().into_bytes())
    }

    /// With a body of `content_type` (replacing any body and content type given before).
    pub fn body_of(mut self, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        self.body = Some(body.into());
        self.headers
            .retain(|(name, _)| !name.eq_ignore_ascii_case("content-type"));
        self.header("Content-Type", content_type)
    }

    /// Remembers the value at `pointer` of the answer's body as `name`.
    pub fn capture(mut self, name: &str, pointer: &str) -> Self {
        self.captures.push((name.to_string(), pointer.to_string()));
        self
    }

    /// Sent again until its answer meets `condition` (see [`Request::until`]).
    pub fn until(mut self, condition: fn(&Answer) -> bool) -> Self {
        self.until = Some(condition);
        self
    }

    /// Sent after each target's store is compacted and its server restarted (see
    /// [`Request::compact_first`]).
    pub fn compact_first(mut self) -> Self {
        self.compact_first = true;
        self
    }

    /// Sent while `held` is held in flight `copies` times at once (see
    /// [`Request::while_held`]).
    pub fn while_held(mut self, held: Request, copies: usize) -> Self {
        self.while_held = Some((Box::new(held), copies));
        self
    }

    /// Sent to the target's dev host (see [`Request::to_host`]).
    pub fn sent_to_host(mut self) -> Self {
        self.to_host = true;
        self
    }

    /// Compares `view` of the body.
    pub fn view(mut self, view: View) -> Self {
        self.view = view;
        self
    }
}
