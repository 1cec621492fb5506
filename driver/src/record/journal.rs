//! What the recording proxy keeps while it runs, shared by its tasks: the finished
//! [`Exchange`]s, the problems met (each naming its request), the counters of exchanges and
//! WebSocket connections, and the tasks themselves, so that dropping the proxy ends them.

use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::task::JoinSet;

use super::exchange::Exchange;
use crate::lock;

/// The proxy's shared record.
#[derive(Debug, Default)]
pub struct Journal {
    next_index: AtomicUsize,
    next_connection: AtomicUsize,
    exchanges: Mutex<Vec<Exchange>>,
    problems: Mutex<Vec<String>>,
    tasks: Mutex<JoinSet<()>>,
}

impl Journal {
    /// The index of the next exchange (one counter for HTTP and WebSocket, in arrival order).
    pub fn next_index(&self) -> usize {
        self.next_index.fetch_add(1, Ordering::SeqCst)
    }

    /// The number of the next WebSocket upgrade, from 0.
    pub fn next_connection(&self) -> usize {
        self.next_connection.fetch_add(1, Ordering::SeqCst)
    }

    /// Keeps a finished exchange.
    pub fn finish(&self, exchange: Exchange) {
        lock(&self.exchanges).push(exchange);
    }

    /// Notes a problem (the message names the request it is about).
    pub fn problem(&self, message: String) {
        lock(&self.problems).push(message);
    }

    /// The finished exchanges, by index.
    pub fn exchanges(&self) -> Vec<Exchange> {
        let mut exchanges = lock(&self.exchanges).clone();
        exchanges.sort_by_key(|e| e.index);
        exchanges
    }

    /// The problems, in the order they were met.
    pub fn problems(&self) -> Vec<String> {
        lock(&self.problems).clone()
    }

    /// Runs `task` until it ends or [`Journal::stop`] is called.
    pub fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let mut tasks = lock(&self.tasks);
        while tasks.try_join_next().is_some() {}
        tasks.spawn(task);
    }

    /// Ends every task.
    pub fn stop(&self) {
        lock(&self.tasks).abort_all();
    }
}
