//! The fleet's shared budget of requests toward the provider
//! (`provider.fleet_requests_per_second`): a GCRA counter in the tier, one
//! script call per request. A tier that does not answer paces nothing; a
//! counter that this script cannot have written is reset, never obeyed.

use super::SharedTier;
use crate::provider::client::{Hooked, OverBudget, Pace};
use crate::store::shared::keys;
use fred::prelude::LuaInterface;
use std::time::Duration;
use tokio::time::Instant;

/// GCRA over the server's clock: `ARGV[1]` is the interval between
/// requests and `ARGV[2]` the burst tolerance, in microseconds. Returns 0
/// when a request may go now (and counts it), else the microseconds to wait.
/// A counter this script cannot have written (another type than a string,
/// not a number, past `now + burst + interval`, or without an expiry) is
/// reset, so no value written by anyone else holds the fleet's loads back
/// or turns the budget off (a key of another type would otherwise fail
/// every call, and a failed call paces nothing).
///
/// The type is told by a `GET` that fails (`redis.pcall`), not by `TYPE`,
/// so the ACL user documented for the tier needs no command it lacked.
const BUDGET: &str = "local v = redis.pcall('GET', KEYS[1]) \
     if type(v) == 'table' and v.err then redis.call('DEL', KEYS[1]) v = false end \
     local t = redis.call('TIME') \
     local now = tonumber(t[1]) * 1000000 + tonumber(t[2]) \
     local interval = tonumber(ARGV[1]) \
     local tat = tonumber(v) \
     if not tat or tat ~= tat or tat < now or tat > now + tonumber(ARGV[2]) + interval \
     or redis.call('PTTL', KEYS[1]) < 0 then tat = now end \
     local wait = tat - tonumber(ARGV[2]) - now \
     if wait > 0 then return math.ceil(wait) end \
     local new = tat + interval \
     redis.call('SET', KEYS[1], string.format('%d', new), 'PX', math.ceil((new - now) / 1000) + 1000) \
     return 0";

/// The fleet's shared budget toward the provider: one script call per
/// request. A tier that does not answer paces nothing.
impl Pace for SharedTier {
    fn admit(&self, deadline: Instant) -> Hooked<'_, Result<(), OverBudget>> {
        Box::pin(async move {
            let Some(rate) = self.settings.fleet_requests_per_second else {
                return Ok(());
            };
            let interval = 1_000_000 / u64::from(rate.max(1));
            // A second's worth of requests may go at once.
            let burst = interval * u64::from(rate.max(1) - 1);
            let key = keys::budget(&self.settings.key_prefix);
            loop {
                let args = vec![interval.to_string(), burst.to_string()];
                let Some(wait) = self
                    .call(self.client.eval::<i64, _, _, _>(BUDGET, key.as_str(), args))
                    .await
                else {
                    return Ok(());
                };
                if wait <= 0 {
                    return Ok(());
                }
                let wake = Instant::now() + Duration::from_micros(wait as u64);
                if wake >= deadline {
                    return Err(OverBudget);
                }
                tokio::time::sleep_until(wake).await;
            }
        })
    }
}
