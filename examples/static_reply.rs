//! The floor under `tableq serve`: the same HTTP stack — one single-threaded tokio runtime,
//! tokio's listener, hyper's HTTP/1.1 connections, the binary's allocator — answering every
//! request with one fixed reply, and nothing else: no routing, no authorization, no store,
//! no request log.
//!
//! `scripts/request-cost.sh` serves a point get's reply body with it beside `tableq serve`
//! and nginx, so that a run shows how much of a request's CPU the stack itself costs before
//! tableq does any work (issue 31: "the nginx and hand-loop limits beside them").
//!
//! Run: `cargo run --release --example static_reply -- --port 8080 --body reply.json`; it
//! prints `listening on ADDR` once it accepts, and answers `GET`s (any path) with the body,
//! `Content-Type: application/json` and the headers hyper adds (`Date`, `Content-Length`).

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;

// The allocator of the `tableq` binary, so that the floor pays what tableq pays for it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `--port P` (0: any free port) and `--body FILE`.
struct Args {
    port: u16,
    body: std::path::PathBuf,
}

fn args() -> Result<Args, String> {
    let mut port = None;
    let mut body = None;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let value = it.next().ok_or_else(|| format!("{arg} wants a value"))?;
        match arg.as_str() {
            "--port" => port = Some(value.parse().map_err(|e| format!("--port {value}: {e}"))?),
            "--body" => body = Some(value.into()),
            _ => return Err(format!("unknown argument {arg}")),
        }
    }
    Ok(Args {
        port: port.unwrap_or(0),
        body: body.ok_or("--body FILE is required")?,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args().map_err(|e| format!("static_reply: {e} (usage: --port P --body FILE)"))?;
    let body = Bytes::from(std::fs::read(&args.body)?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
        println!("listening on {}", listener.local_addr()?);
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            let body = body.clone();
            tokio::task::spawn(async move {
                let reply = service_fn(move |_request: Request<hyper::body::Incoming>| {
                    let body = body.clone();
                    async move {
                        let mut response = Response::new(Full::new(body));
                        response.headers_mut().insert(
                            hyper::header::CONTENT_TYPE,
                            hyper::header::HeaderValue::from_static("application/json"),
                        );
                        Ok::<_, Infallible>(response)
                    }
                });
                // A connection's error (a reset, a malformed request) ends that connection only.
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), reply)
                    .await;
            });
        }
    })
}
