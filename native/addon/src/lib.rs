//! napi-rs addon of h3-node: JavaScript's view of the h3core protocol crate
//! (native/core: UDP I/O loop, HTTP/3 and WebTransport, connection table,
//! deadlines, which report to one `h3core::app::Application`).
//!
//! Here: `boundary` (the batched binary protocol to TypeScript; its
//! `JsLink` is the application the core reports to), `bench_handler`
//! (benchmark only, cargo feature `bench-handler`), and this file, which
//! exposes `listen`, `limits` and the `NativeServer` handle to JavaScript.

#![deny(clippy::all)]

mod allocator;
#[cfg(feature = "bench-handler")]
pub mod bench_handler;
#[cfg(feature = "bench-handler")]
pub mod bench_transfer;
pub mod boundary;
mod identities;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;

use boundary::link::{Inbox, JsLink, Sink};
use h3core::app::Application;
use h3core::certificates::IdentityStore;
use h3core::config::Options;
use h3core::connection_ids::QuicLb;
use h3core::retry::RetryMode;
use h3core::server::{Server, Shared};
use h3core::workers::{Steering, WorkerGroup, WorkerRole};
use h3core::{counters, h3, panic_report, server};

#[napi(object)]
pub struct NativeOptions {
    pub host: String,
    pub port: u32,
    /// The identities (identities.rs): chains as PEM, leaf first (Node read
    /// any file); keys as PKCS#8 DER (Node decrypted any passphrase),
    /// parsed into BoringSSL's key objects and never written.
    pub tls: identities::NativeTls,
    pub streamed_bodies: bool,
    pub body_window: Option<u32>,
    pub body_credit: Option<u32>,
    pub idle_timeout_ms: Option<u32>,
    pub handshake_timeout_ms: Option<u32>,
    pub max_connections: Option<u32>,
    pub max_streams_per_connection: Option<u32>,
    pub max_field_section_size: Option<u32>,
    pub stream_window: Option<u32>,
    /// Test-only fault injection (see H3Options::panic_on_path).
    pub panic_on_path: Option<String>,
    /// Test-only: no GSO, one datagram per send (a loopback capture for tshark).
    pub no_gso: Option<bool>,
    /// Serve WebTransport sessions (extended CONNECT, HTTP datagrams).
    pub webtransport: Option<bool>,
    /// Sessions go to JavaScript (accept, streams, datagrams) instead of the echo.
    pub webtransport_app: Option<bool>,
    /// Sessions open at once, server-wide.
    pub webtransport_max_sessions: Option<u32>,
    /// Client-opened session streams open at once, server-wide.
    pub webtransport_max_streams: Option<u32>,
    /// Client-opened streams one session may have open.
    pub webtransport_max_streams_per_session: Option<u32>,
    /// NSS key-log file for TLS secrets (the SSLKEYLOGFILE convention).
    pub keylog_path: Option<String>,
    /// Directory for one qlog (JSON-SEQ) file per connection.
    pub qlog_dir: Option<String>,
    /// Key for stateless reset tokens: 32 bytes; absent, one random key per
    /// process.
    pub stateless_reset_key: Option<Buffer>,
    /// quiche's congestion controller: "cubic" (the default), "reno", "bbr2".
    pub congestion_control: Option<String>,
    /// Send packets at the times quiche's pacer gives them (default true).
    pub pacing: Option<bool>,
    /// The congestion window a connection starts with, in packets (2-128;
    /// default 10, RFC 9002 section 7.2).
    pub initial_window: Option<u32>,
    /// QUIC-LB plaintext connection IDs: the config rotation codepoint
    /// (0-6) and this server's ID (1-15 bytes); both or neither.
    pub quic_lb_config_id: Option<u32>,
    pub quic_lb_server_id: Option<Buffer>,
    /// Address validation: "off", "on" or "auto" (the default: Retry once
    /// `retryThreshold` handshakes are under way at once).
    pub retry: Option<String>,
    pub retry_threshold: Option<u32>,
    /// Key for Retry tokens: 32 bytes; absent, random per process.
    pub retry_token_key: Option<Buffer>,
    /// TLS session ticket secret: 48 bytes, from which rotating keys derive;
    /// absent, BoringSSL's own key (or a worker group's random secret).
    pub ticket_key: Option<Buffer>,
    /// Seconds each derived ticket key seals new tickets (default 12 h).
    pub ticket_key_rotation_s: Option<u32>,
    /// 0-RTT: "safe" (the default: GET, HEAD and OPTIONS answered in early
    /// data, other methods 425), "all", or "off" (no early data).
    pub early_data: Option<String>,
    /// One worker of several: the group `createWorkerGroup` made, and this
    /// worker's index in it (0 to count - 1).
    pub worker_group: Option<u32>,
    pub worker_index: Option<u32>,
    /// Benchmark only ("a" or "c"): Rust answers Profile A / C itself
    /// (bench_handler.rs, in addons built with the `bench-handler` feature),
    /// to measure the boundary's cost.
    pub bench_native_handler: Option<String>,
}

#[napi(object)]
pub struct NativeStatusCount {
    pub status: u32,
    pub count: f64,
}

#[napi(object)]
pub struct NativeAddress {
    pub address: String,
    pub family: String,
    pub port: u32,
}

/// Build-time limits, exposed so TypeScript reports the same numbers the
/// native core enforces.
#[napi(object)]
pub struct NativeLimits {
    pub webtransport_sessions_cap: u32,
    pub webtransport_peer_streams_cap: u32,
    pub default_body_window: u32,
    pub default_body_credit: u32,
    pub default_max_field_section_size: u32,
    pub default_handshake_timeout_ms: u32,
    /// The range `initialWindow` takes, in packets, and its default.
    pub initial_window_min: u32,
    pub initial_window_max: u32,
    pub default_initial_window: u32,
}

#[napi]
pub fn limits() -> NativeLimits {
    let d = Options::default();
    NativeLimits {
        webtransport_sessions_cap: h3::webtransport::SESSIONS_CAP as u32,
        webtransport_peer_streams_cap: h3::webtransport::PEER_STREAMS_CAP as u32,
        default_body_window: d.body_window as u32,
        default_body_credit: d.body_credit as u32,
        default_max_field_section_size: d.max_field_section_size as u32,
        default_handshake_timeout_ms: d.handshake_timeout_ms as u32,
        initial_window_min: *h3core::config::INITIAL_WINDOW_RANGE.start() as u32,
        initial_window_max: *h3core::config::INITIAL_WINDOW_RANGE.end() as u32,
        default_initial_window: d.initial_window_packets as u32,
    }
}

/// Hands the allocators' free pages back to the system and says whether
/// glibc returned any: mimalloc's `mi_collect(true)` for the addon's heap
/// on this thread (the I/O thread purges its own freed pages as it runs),
/// then glibc's `malloc_trim(0)` for Node's, which since glibc 2.8 walks
/// every arena. A measurement aid, like V8's `gc()`: the soak and the abort
/// tests read RSS after both, so that pages an allocator keeps cached are
/// not mistaken for growth.
#[napi]
pub fn release_free_native_memory() -> bool {
    allocator::collect();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::os::raw::c_int;
        }
        // SAFETY: malloc_trim takes no pointers and is thread-safe (it locks each arena).
        unsafe { malloc_trim(0) != 0 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

type EventCallback = ThreadsafeFunction<EventBatchBytes, Unknown<'static>, EventBatchBytes, Status, false>;

/// One finished event batch on its way to JavaScript, where it becomes a
/// Buffer in memory Node allocates (`napi_create_buffer`); the Rust
/// bytes are freed as soon as they are copied. A Buffer over the Rust bytes
/// themselves kept them until V8 collected it, and mimalloc's arena, getting
/// those pages back from the JavaScript thread in bursts, purged them and
/// faulted them in again for the next batches (docs/design.md, "Event
/// batches in Node's memory").
pub struct EventBatchBytes(Vec<u8>);

impl ToNapiValue for EventBatchBytes {
    unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        let mut data = std::ptr::null_mut();
        let mut out = std::ptr::null_mut();
        let len = val.0.len();
        // SAFETY: `env` is the live environment napi-rs calls this with.
        let status = unsafe { napi::sys::napi_create_buffer(env, len, &mut data, &mut out) };
        if status != napi::sys::Status::napi_ok {
            return Err(Error::new(Status::from(status), "could not make a Buffer for an event batch".to_owned()));
        }
        if len > 0 {
            // SAFETY: napi_create_buffer gave `len` writable bytes at `data`,
            // owned by the new Buffer, which nothing else sees yet. Copied
            // here rather than by napi_create_buffer_copy's one memcpy: in
            // pieces, as h3core::bytes explains.
            let dst = unsafe { std::slice::from_raw_parts_mut(data.cast::<u8>(), len) };
            h3core::bytes::copy(dst, &val.0);
        }
        Ok(out)
    }
}

/// The counters' snapshot for JavaScript, built from the one list in
/// h3core's counters.rs: a plain number per counter and per self-answered
/// status (plain fields: a napi array of objects would be no clearer).
macro_rules! native_counters {
    (counters { $($(#[$doc:meta])* $name:ident,)* } statuses { $($status_field:ident = $status:literal,)* }) => {
        #[napi(object)]
        pub struct NativeCounters {
            $($(#[$doc])* pub $name: f64,)*
            $(pub $status_field: f64,)*
        }

        fn counters_snapshot(c: &counters::Counters) -> NativeCounters {
            NativeCounters {
                $($name: counters::Counters::get(&c.$name) as f64,)*
                $($status_field: c.native_statuses.get($status) as f64,)*
            }
        }
    };
}

h3core::reported_counters!(native_counters);

/// Every counter at zero: what a server that is not listening reports.
#[napi]
pub fn zero_counters() -> NativeCounters {
    counters_snapshot(&counters::Counters::default())
}

#[napi]
pub struct NativeServer {
    shared: Arc<Shared>,
    /// The worker group this server is one worker of.
    group: Option<Arc<WorkerGroup>>,
    inbox: Arc<Inbox>,
    local: std::net::SocketAddr,
    thread: Option<JoinHandle<()>>,
}

/// Binds the UDP socket, loads the TLS identity and starts the I/O thread.
/// `onEvents` receives every event batch as one Buffer.
/// Worker groups by the number `createWorkerGroup` returned; process-wide,
/// so every worker thread's addon instance finds the same group.
static GROUPS: std::sync::Mutex<Vec<Option<Arc<WorkerGroup>>>> = std::sync::Mutex::new(Vec::new());

fn group_of(id: u32) -> Option<Arc<WorkerGroup>> {
    GROUPS.lock().unwrap_or_else(|p| p.into_inner()).get(id as usize).cloned().flatten()
}

/// Makes the group of `count` workers of one server; `ebpf`: steer packets
/// to their owner in the kernel where it allows (else forward in-process).
#[napi(catch_unwind)]
pub fn create_worker_group(count: u32, ebpf: bool) -> Result<u32> {
    let group = WorkerGroup::new(count as usize, ebpf).map_err(Error::from_reason)?;
    let mut groups = GROUPS.lock().unwrap_or_else(|p| p.into_inner());
    groups.push(Some(Arc::new(group)));
    Ok((groups.len() - 1) as u32)
}

/// Forgets a group once its server closed (workers still running keep it).
#[napi(catch_unwind)]
pub fn release_worker_group(id: u32) {
    if let Some(slot) = GROUPS.lock().unwrap_or_else(|p| p.into_inner()).get_mut(id as usize) {
        *slot = None;
    }
}

#[napi(object)]
pub struct NativeWorkerStats {
    pub connections_accepted: f64,
    pub connections_open: f64,
    /// Packets this worker's socket read for a connection another worker owns.
    pub packets_forwarded: f64,
    /// Packets other workers handed to this one.
    pub packets_received_forwarded: f64,
    pub mailbox_drops: f64,
}

#[napi(object)]
pub struct NativeGroupStats {
    /// "ebpf" or "forwarding".
    pub steering: String,
    /// Why (for forwarding: what refused eBPF, or that it was not asked for).
    pub steering_reason: String,
    pub workers: Vec<NativeWorkerStats>,
}

/// A group's steering and per-worker tallies.
#[napi(catch_unwind)]
pub fn worker_group_stats(id: u32) -> Option<NativeGroupStats> {
    let group = group_of(id)?;
    let (steering, reason) = group.steering();
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64;
    Some(NativeGroupStats {
        steering: match steering {
            Steering::Ebpf => "ebpf".into(),
            Steering::Forwarding => "forwarding".into(),
        },
        steering_reason: reason,
        workers: group
            .workers
            .iter()
            .map(|w| NativeWorkerStats {
                connections_accepted: get(&w.connections_accepted),
                connections_open: get(&w.connections_open),
                packets_forwarded: get(&w.packets_forwarded),
                packets_received_forwarded: get(&w.packets_received_forwarded),
                mailbox_drops: get(&w.mailbox_drops),
            })
            .collect(),
    })
}

#[napi(catch_unwind)]
pub fn listen(
    env: Env,
    options: NativeOptions,
    #[napi(ts_arg_type = "(batch: Buffer) => void")] on_events: EventCallback,
) -> Result<NativeServer> {
    allocator::tune();
    let port = u16::try_from(options.port).map_err(|_| Error::from_reason(format!("port out of range: {}", options.port)))?;
    let d = Options::default();
    let stateless_reset_key = match options.stateless_reset_key {
        None => None,
        Some(b) => Some(
            <[u8; 32]>::try_from(&b[..])
                .map_err(|_| Error::from_reason(format!("statelessResetKey must be 32 bytes, not {}", b.len())))?,
        ),
    };
    let quic_lb = match (options.quic_lb_config_id, options.quic_lb_server_id) {
        (None, None) => None,
        (Some(config), Some(server_id)) => Some(
            QuicLb::new(u8::try_from(config).unwrap_or(u8::MAX), server_id.to_vec())
                .map_err(|e| Error::from_reason(e.to_string()))?,
        ),
        _ => return Err(Error::from_reason("quicLb needs both configId and serverId")),
    };
    let initial_window_packets = match options.initial_window {
        None => d.initial_window_packets,
        Some(n) if h3core::config::INITIAL_WINDOW_RANGE.contains(&(n as usize)) => n as usize,
        Some(n) => {
            let r = h3core::config::INITIAL_WINDOW_RANGE;
            return Err(Error::from_reason(format!("initialWindow must be {} to {} packets, got {n}", r.start(), r.end())));
        }
    };
    let retry = match options.retry.as_deref() {
        None | Some("auto") => {
            RetryMode::Auto { half_open: options.retry_threshold.map_or(h3core::retry::AUTO_THRESHOLD, |t| t as usize) }
        }
        Some("on") => RetryMode::On,
        Some("off") => RetryMode::Off,
        Some(other) => return Err(Error::from_reason(format!("retry must be off, on or auto, got {other:?}"))),
    };
    let retry_key = match options.retry_token_key {
        None => None,
        Some(b) => Some(
            <[u8; 32]>::try_from(&b[..])
                .map_err(|_| Error::from_reason(format!("retryTokenKey must be 32 bytes, not {}", b.len())))?,
        ),
    };
    let ticket_key = match options.ticket_key {
        None => None,
        Some(b) => Some(
            <[u8; 48]>::try_from(&b[..])
                .map_err(|_| Error::from_reason(format!("ticketKey must be 48 bytes, not {}", b.len())))?,
        ),
    };
    let (early_data, early_data_any_method) = match options.early_data.as_deref() {
        None | Some("safe") => (true, false),
        Some("all") => (true, true),
        Some("off") => (false, false),
        Some(other) => return Err(Error::from_reason(format!("earlyData must be safe, all or off, got {other:?}"))),
    };
    let worker = match (options.worker_group, options.worker_index) {
        (None, None) => None,
        (Some(id), Some(index)) => Some(WorkerRole {
            group: group_of(id).ok_or_else(|| Error::from_reason(format!("no worker group {id}")))?,
            index: index as usize,
        }),
        _ => return Err(Error::from_reason("workerGroup and workerIndex go together")),
    };
    let identities = identities::identities(&options.tls)?;
    // A worker group's servers share the first one's identities, so that
    // setSecureContext on any of them changes every worker's.
    let store = match &worker {
        Some(role) => role.group.identities.get_or_init(|| Arc::new(IdentityStore::new(identities))).clone(),
        None => Arc::new(IdentityStore::new(identities)),
    };
    let opts = Options {
        worker,
        host: options.host,
        port,
        identities: Some(store),
        streamed_bodies: options.streamed_bodies,
        body_window: options.body_window.map_or(d.body_window, |v| v as usize),
        body_credit: options.body_credit.map_or(d.body_credit, |v| v as usize),
        idle_timeout_ms: options.idle_timeout_ms.map_or(d.idle_timeout_ms, u64::from),
        handshake_timeout_ms: options.handshake_timeout_ms.map_or(d.handshake_timeout_ms, u64::from),
        max_connections: options.max_connections.map_or(d.max_connections, |v| v as usize),
        max_streams_per_connection: options.max_streams_per_connection.map_or(d.max_streams_per_connection, u64::from),
        max_field_section_size: options.max_field_section_size.map_or(d.max_field_section_size, |v| v as usize),
        stream_window: options.stream_window.map_or(d.stream_window, u64::from),
        panic_on_path: options.panic_on_path,
        no_gso: options.no_gso.unwrap_or(false),
        webtransport: options.webtransport.unwrap_or(d.webtransport),
        webtransport_app: options.webtransport_app.unwrap_or(d.webtransport_app),
        webtransport_max_sessions: options.webtransport_max_sessions.map_or(d.webtransport_max_sessions, u64::from),
        webtransport_max_streams: options.webtransport_max_streams.map_or(d.webtransport_max_streams, u64::from),
        webtransport_max_streams_per_session: options
            .webtransport_max_streams_per_session
            .map_or(d.webtransport_max_streams_per_session, u64::from),
        keylog_path: options.keylog_path,
        qlog_dir: options.qlog_dir,
        stateless_reset_key,
        congestion_control: options.congestion_control.unwrap_or(d.congestion_control),
        pacing: options.pacing.unwrap_or(d.pacing),
        initial_window_packets,
        quic_lb,
        retry,
        retry_key,
        ticket_key,
        ticket_rotation_s: match options.ticket_key_rotation_s {
            None => d.ticket_rotation_s,
            Some(0) => return Err(Error::from_reason("ticketKeyRotation must be at least 1 second")),
            Some(s) => u64::from(s),
        },
        early_data,
        early_data_any_method,
    };
    let inbox = Arc::new(Inbox::default());
    let sink: Sink = Box::new(move |batch: Vec<u8>| {
        on_events.call(EventBatchBytes(batch), ThreadsafeFunctionCallMode::NonBlocking);
    });
    let link = JsLink::new(inbox.clone(), sink);
    let server = match options.bench_native_handler.as_deref() {
        None | Some("") => start(opts, inbox, link),
        Some(name) => start_bench(opts, inbox, link, name),
    }?;
    // A worker thread that ends without close() (an uncaught exception)
    // takes its JavaScript with it: its I/O loop stops too, closing its
    // connections and its socket, rather than serve with nobody to answer.
    let shared = server.shared.clone();
    env.add_env_cleanup_hook(shared, |shared| {
        shared.shutdown.fetch_max(server::SHUTDOWN_NOW, Ordering::AcqRel);
        let _ = shared.waker.wake();
    })?;
    Ok(server)
}

#[cfg(feature = "bench-handler")]
fn start_bench(mut opts: Options, inbox: Arc<Inbox>, link: JsLink, name: &str) -> Result<NativeServer> {
    let handler = bench_handler::NativeHandler::parse(name)
        .ok_or_else(|| Error::from_reason(format!("unknown bench native handler: {name} (a, c or w8:<file>)")))?;
    handler.adjust(&mut opts);
    start(opts, inbox, bench_handler::BenchHandler::new(handler, link))
}

#[cfg(not(feature = "bench-handler"))]
fn start_bench(_: Options, _: Arc<Inbox>, _: JsLink, _: &str) -> Result<NativeServer> {
    Err(Error::from_reason("benchNativeHandler needs the addon built with the cargo feature bench-handler"))
}

/// Binds, then runs the I/O loop on its own thread, reporting to `app`.
fn start<A: Application + Send + 'static>(opts: Options, inbox: Arc<Inbox>, app: A) -> Result<NativeServer> {
    install_panic_hook();
    let group = opts.worker.as_ref().map(|w| w.group.clone());
    let bound = Server::bind(opts, app).map_err(|e| Error::from_reason(e.to_string()))?;
    let local = bound.local;
    let server = bound.server;
    let thread = std::thread::Builder::new()
        .name("h3-io".into())
        .spawn(move || panic_report::run_reporting_escapes(|| server.run()))
        .map_err(|e| Error::from_reason(format!("cannot start I/O thread: {e}")))?;
    Ok(NativeServer { shared: bound.shared, group, inbox, local, thread: Some(thread) })
}

fn install_panic_hook() {
    panic_report::install();
}

#[napi]
impl NativeServer {
    #[napi(catch_unwind)]
    pub fn address(&self) -> NativeAddress {
        NativeAddress {
            address: self.local.ip().to_string(),
            family: if self.local.is_ipv4() { "IPv4".into() } else { "IPv6".into() },
            port: u32::from(self.local.port()),
        }
    }

    /// A snapshot of the server-wide counters.
    #[napi(catch_unwind)]
    pub fn counters(&self) -> NativeCounters {
        counters_snapshot(&self.shared.counters)
    }

    /// Responses the application started, by final status, server-wide
    /// (with workers, every worker's).
    #[napi(catch_unwind)]
    pub fn response_statuses(&self) -> Vec<NativeStatusCount> {
        let statuses = self.shared.counters.app_statuses.nonzero();
        statuses.into_iter().map(|(status, count)| NativeStatusCount { status: u32::from(status), count: count as f64 }).collect()
    }

    /// Hands a command batch to the I/O loop and acknowledges every event
    /// batch up to `acked_batch`. One call per JavaScript flush.
    #[napi(catch_unwind)]
    pub fn submit(&self, commands: Option<&[u8]>, acked_batch: f64) {
        if let Some(c) = commands {
            if !c.is_empty() {
                self.inbox.commands.lock().unwrap_or_else(|p| p.into_inner()).push(c.to_vec());
            }
        }
        self.inbox.acked_batch.fetch_max(acked_batch as u64, Ordering::AcqRel);
        let counters = &self.shared.counters;
        let tally = if self.shared.doorbell.ring() { &counters.submit_wakes } else { &counters.submit_wakes_saved };
        h3core::counters::Counters::add(tally, 1);
    }

    /// Closes every connection with nothing in flight (no request, no
    /// unacknowledged response, no WebTransport session), on every worker
    /// of a group; the others go on. The loop acts on its next turn.
    #[napi(catch_unwind)]
    pub fn close_idle_connections(&self) {
        match &self.group {
            Some(g) => {
                g.close_idle.fetch_add(1, Ordering::AcqRel);
                g.wake(u64::MAX);
            }
            None => {
                self.shared.close_idle.fetch_add(1, Ordering::AcqRel);
                let _ = self.shared.waker.wake();
            }
        }
    }

    /// Starts shutdown. Graceful: GOAWAY, in-flight requests finish (up to
    /// 3 s), then connections close. Otherwise every connection closes now.
    /// Completion is signalled by a SERVER_CLOSED event.
    #[napi(catch_unwind)]
    pub fn shutdown(&self, graceful: bool) {
        let level = if graceful { server::SHUTDOWN_GRACEFUL } else { server::SHUTDOWN_NOW };
        self.shared.shutdown.fetch_max(level, Ordering::AcqRel);
        let _ = self.shared.waker.wake();
    }

    /// Waits for the I/O thread after SERVER_CLOSED; cheap by then.
    #[napi(catch_unwind)]
    pub fn join(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
