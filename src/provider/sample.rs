//! TEMPORARY STUB (replaced by the client branch).
use std::net::SocketAddr;
pub struct SampleUpstream {
    addr: SocketAddr,
}
impl SampleUpstream {
    pub async fn start(addr: SocketAddr) -> std::io::Result<SampleUpstream> {
        Ok(SampleUpstream { addr })
    }
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }
}
