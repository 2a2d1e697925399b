//! [`StepLayer`]: a tower [`Layer`] for a filter that does its work before the rest of the
//! chain and, optionally, on its response, without waiting for anything itself (request info,
//! audit id, metrics, the in-flight limit).
//!
//! Its service calls the rest of the chain directly and its future is named
//! ([`StepFuture`]): nothing is boxed and nothing cloned per request, and the request is
//! handed on by value rather than kept in a future of each level. A filter that awaits (the
//! authenticator, the authorizer) is a [`super::filter::FilterLayer`] instead.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::body::Body;
use http::{Request, Response};
use pin_project_lite::pin_project;
use tower::{Layer, Service};

/// A filter that never waits: [`Step::before`] reads or changes the request, or answers it;
/// what it keeps then sees the response ([`AfterResponse::after`]).
pub trait Step: Clone + Send + Sync + 'static {
    /// What the step keeps while the rest of the chain serves the request.
    type State: AfterResponse;

    /// Prepares `req` for the rest of the chain, or answers it.
    fn before(&self, req: &mut Request<Body>) -> Before<Self::State>;
}

/// What a [`Step`] decided before the rest of the chain.
#[derive(Debug)]
pub enum Before<T> {
    /// Hand the request on, keeping this for its response.
    Continue(T),
    /// Answer the request with this.
    Answer(Response<Body>),
}

/// What a [`Step`] does with the response of the rest of the chain.
pub trait AfterResponse: Send + 'static {
    /// The response the step answers, given the rest of the chain's.
    fn after(self, res: Response<Body>) -> Response<Body>;
}

impl AfterResponse for () {
    fn after(self, res: Response<Body>) -> Response<Body> {
        res
    }
}

/// A [`Step`] as a tower [`Layer`].
#[derive(Clone, Debug)]
pub struct StepLayer<T>(pub T);

impl<T: Clone, S> Layer<S> for StepLayer<T> {
    type Service = StepService<T, S>;

    fn layer(&self, inner: S) -> Self::Service {
        StepService {
            step: self.0.clone(),
            inner,
        }
    }
}

/// The service of a [`StepLayer`].
#[derive(Clone, Debug)]
pub struct StepService<T, S> {
    step: T,
    inner: S,
}

impl<T, S> Service<Request<Body>> for StepService<T, S>
where
    T: Step,
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = StepFuture<S::Future, T::State>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        match self.step.before(&mut req) {
            Before::Continue(state) => StepFuture::Running {
                inner: self.inner.call(req),
                state: Some(state),
            },
            Before::Answer(res) => StepFuture::Answered { res: Some(res) },
        }
    }
}

pin_project! {
    /// The future of a [`StepService`].
    // The variants' fields: the rest of the chain's future, what is kept for the response,
    // or the answer until it is given.
    #[allow(missing_docs)]
    #[project = StepFutureProjection]
    pub enum StepFuture<F, A> {
        /// The rest of the chain is serving the request.
        Running {
            #[pin]
            inner: F,
            state: Option<A>,
        },
        /// The step answered the request itself.
        Answered {
            res: Option<Response<Body>>,
        },
    }
}

impl<F, A> Future for StepFuture<F, A>
where
    F: Future<Output = Result<Response<Body>, Infallible>>,
    A: AfterResponse,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            StepFutureProjection::Running { inner, state } => {
                let res = ready!(inner.poll(cx))?;
                let state = state.take().expect("a step's future polled after it ended");
                Poll::Ready(Ok(state.after(res)))
            }
            StepFutureProjection::Answered { res } => Poll::Ready(Ok(res
                .take()
                .expect("a step's future polled after it ended"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    /// Refuses requests with a `refuse` header, else marks the response with `x-after`.
    #[derive(Clone)]
    struct Mark;

    struct Marked;

    impl AfterResponse for Marked {
        fn after(self, mut res: Response<Body>) -> Response<Body> {
            res.headers_mut()
                .insert("x-after", http::HeaderValue::from_static("1"));
            res
        }
    }

    impl Step for Mark {
        type State = Marked;

        fn before(&self, req: &mut Request<Body>) -> Before<Marked> {
            if req.headers().contains_key("refuse") {
                let mut res = Response::new(Body::empty());
                *res.status_mut() = http::StatusCode::FORBIDDEN;
                return Before::Answer(res);
            }
            req.headers_mut()
                .insert("x-before", http::HeaderValue::from_static("1"));
            Before::Continue(Marked)
        }
    }

    #[tokio::test]
    async fn before_and_after_the_rest_or_answered() {
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = seen.clone();
        let end = tower::service_fn(move |req: Request<Body>| {
            assert!(req.headers().contains_key("x-before"));
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { Ok::<_, Infallible>(Response::new(Body::empty())) }
        });
        let service = StepLayer(Mark).layer(end);
        let res = service
            .clone()
            .oneshot(Request::new(Body::empty()))
            .await
            .unwrap();
        assert_eq!(res.headers()["x-after"], "1");
        let refused = Request::builder()
            .header("refuse", "yes")
            .body(Body::empty())
            .unwrap();
        let res = service.oneshot(refused).await.unwrap();
        assert_eq!(res.status(), http::StatusCode::FORBIDDEN);
        assert!(!res.headers().contains_key("x-after"));
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
