//! Kernel steering for workers: an eBPF program of type SK_REUSEPORT,
//! attached to the workers' reuseport group (SO_ATTACH_REUSEPORT_EBPF),
//! picks for each datagram the socket of the worker that owns its
//! destination connection ID, by the rule in workers.rs
//! (`id[offset] % count`), from a REUSEPORT_SOCKARRAY map indexed by worker.
//! Where the owner's slot is empty, or the datagram is too short to carry
//! an ID, it passes without choosing and the kernel's 4-tuple hash decides.
//!
//! The program is ten-odd instructions, so it is assembled here rather than
//! compiled (no clang, no libbpf, no BTF); it needs CAP_BPF (root, or
//! unprivileged BPF enabled). When loading or attaching fails, the group
//! forwards in-process instead and records why.

use crate::workers::Steering;

/// The program reads this much of the UDP payload: a long header's first
/// byte, version and ID length (6 bytes) plus the ID bytes up to the index.
const STACK_BUF: i16 = -32;
const KEY_SLOT: i16 = -36;

pub struct SteeringState {
    count: usize,
    mode: Steering,
    reason: String,
    try_ebpf: bool,
    map_fd: i32,
    prog_fd: i32,
}

impl SteeringState {
    pub fn new(count: usize, try_ebpf: bool) -> SteeringState {
        SteeringState {
            count,
            mode: Steering::Forwarding,
            reason: if try_ebpf { "no worker has joined yet".into() } else { "eBPF steering not asked for".into() },
            try_ebpf,
            map_fd: -1,
            prog_fd: -1,
        }
    }

    pub fn mode(&self) -> Steering {
        self.mode
    }

    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// Worker `index`'s socket joins: loads the program on the first, puts
    /// the socket in the map, attaches the program to the group. Any
    /// failure turns the whole group to forwarding (a half-steered group
    /// would still be correct, but simpler to reason about whole).
    pub fn add_socket(&mut self, index: usize, offset: usize, fd: i32) -> Steering {
        if !self.try_ebpf || fd < 0 {
            return self.mode;
        }
        let result = self.load(offset).and_then(|()| self.insert(index, fd)).and_then(|()| attach(fd, self.prog_fd));
        match result {
            Ok(()) => {
                self.mode = Steering::Ebpf;
                self.reason = "eBPF reuseport program attached".into();
            }
            Err(e) => {
                self.try_ebpf = false;
                self.mode = Steering::Forwarding;
                self.reason = e;
            }
        }
        self.mode
    }

    fn load(&mut self, offset: usize) -> Result<(), String> {
        if self.prog_fd >= 0 {
            return Ok(());
        }
        if offset + 7 > (-STACK_BUF) as usize {
            return Err(format!("connection ID index offset {offset} too large for the steering program"));
        }
        self.map_fd = sys::map_create(self.count as u32).map_err(|e| format!("cannot create the eBPF socket map: {e}"))?;
        let insns = program(self.map_fd, offset as i16, self.count as i32);
        self.prog_fd = sys::prog_load(&insns).map_err(|e| format!("cannot load the eBPF steering program: {e}"))?;
        Ok(())
    }

    fn insert(&self, index: usize, fd: i32) -> Result<(), String> {
        sys::map_update(self.map_fd, index as u32, fd as u64).map_err(|e| format!("cannot add a socket to the eBPF map: {e}"))
    }
}

impl Drop for SteeringState {
    fn drop(&mut self) {
        for fd in [self.prog_fd, self.map_fd] {
            if fd >= 0 {
                // SAFETY: fds this state opened and owns.
                unsafe { libc::close(fd) };
            }
        }
    }
}

fn attach(socket: i32, prog: i32) -> Result<(), String> {
    const SO_ATTACH_REUSEPORT_EBPF: libc::c_int = 52;
    // SAFETY: a valid pointer to an int of the size given.
    let r = unsafe {
        libc::setsockopt(
            socket,
            libc::SOL_SOCKET,
            SO_ATTACH_REUSEPORT_EBPF,
            &prog as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(format!("cannot attach the eBPF program to the socket: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// One eBPF instruction, as the kernel reads it.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn { code, regs: (src << 4) | dst, off, imm }
}

// Opcodes used (linux/bpf.h, linux/bpf_common.h).
const MOV64_REG: u8 = 0xbf;
const MOV64_IMM: u8 = 0xb7;
const ADD64_IMM: u8 = 0x07;
const MOD64_IMM: u8 = 0x97;
const LDX_B: u8 = 0x71;
const STX_W: u8 = 0x63;
const LD_IMM64: u8 = 0x18;
const CALL: u8 = 0x85;
const JNE_IMM: u8 = 0x55;
const JSET_IMM: u8 = 0x45;
const JA: u8 = 0x05;
const EXIT: u8 = 0x95;
const PSEUDO_MAP_FD: u8 = 1;
const FN_SKB_LOAD_BYTES: i32 = 26;
const FN_SK_SELECT_REUSEPORT: i32 = 82;
const SK_PASS: i32 = 1;
/// The UDP header, before the payload the program reads.
const UDP_HEADER: i32 = 8;

/// The program: load the payload's first bytes; the index byte is the
/// ID's byte `offset`, which starts at payload byte 1 in a short header and
/// byte 6 in a long one; select map[byte % count]; pass either way.
pub fn program(map_fd: i32, offset: i16, count: i32) -> Vec<Insn> {
    let (r0, r1, r2, r3, r4, r6, r10) = (0, 1, 2, 3, 4, 6, 10);
    let load_len = i32::from(offset) + 7;
    vec![
        insn(MOV64_REG, r6, r1, 0, 0),
        insn(MOV64_IMM, r2, 0, 0, UDP_HEADER),
        insn(MOV64_REG, r3, r10, 0, 0),
        insn(ADD64_IMM, r3, 0, 0, i32::from(STACK_BUF)),
        insn(MOV64_IMM, r4, 0, 0, load_len),
        insn(CALL, 0, 0, 0, FN_SKB_LOAD_BYTES),
        // 6: a datagram shorter than that: pass (to 21).
        insn(JNE_IMM, r0, 0, 14, 0),
        insn(LDX_B, r2, r10, STACK_BUF + 1 + offset, 0),
        insn(LDX_B, r1, r10, STACK_BUF, 0),
        // 9: the header form bit: a long header's ID starts at byte 6.
        insn(JSET_IMM, r1, 0, 1, 0x80),
        insn(JA, 0, 0, 1, 0),
        insn(LDX_B, r2, r10, STACK_BUF + 6 + offset, 0),
        insn(MOD64_IMM, r2, 0, 0, count),
        insn(STX_W, r10, r2, KEY_SLOT, 0),
        insn(MOV64_REG, r1, r6, 0, 0),
        insn(LD_IMM64, r2, PSEUDO_MAP_FD, 0, map_fd),
        insn(0, 0, 0, 0, 0),
        insn(MOV64_REG, r3, r10, 0, 0),
        insn(ADD64_IMM, r3, 0, 0, i32::from(KEY_SLOT)),
        insn(MOV64_IMM, r4, 0, 0, 0),
        insn(CALL, 0, 0, 0, FN_SK_SELECT_REUSEPORT),
        // 21: pass, with or without a choice.
        insn(MOV64_IMM, r0, 0, 0, SK_PASS),
        insn(EXIT, 0, 0, 0, 0),
    ]
}

/// The bpf(2) calls, with their attribute layouts (linux/bpf.h, union bpf_attr).
mod sys {
    use super::Insn;

    const BPF_MAP_CREATE: libc::c_long = 0;
    const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
    const BPF_PROG_LOAD: libc::c_long = 5;
    const MAP_TYPE_REUSEPORT_SOCKARRAY: u32 = 20;
    const PROG_TYPE_SK_REUSEPORT: u32 = 21;
    const ATTACH_SK_REUSEPORT_SELECT: u32 = 39;

    fn put32(attr: &mut [u8], at: usize, v: u32) {
        attr[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    }

    fn put64(attr: &mut [u8], at: usize, v: u64) {
        attr[at..at + 8].copy_from_slice(&v.to_ne_bytes());
    }

    /// Elsewhere than Linux there is no bpf(2): steering falls back to
    /// forwarding, as when the kernel refuses the program.
    #[cfg(not(target_os = "linux"))]
    fn bpf(_cmd: libc::c_long, _attr: &mut [u8; 128]) -> std::io::Result<i32> {
        Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
    }

    #[cfg(target_os = "linux")]
    fn bpf(cmd: libc::c_long, attr: &mut [u8; 128]) -> std::io::Result<i32> {
        // SAFETY: attr is a zeroed bpf_attr-sized buffer, laid out for `cmd`;
        // every pointer in it outlives the call.
        let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len() as libc::c_uint) };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(r as i32)
    }

    pub fn map_create(entries: u32) -> std::io::Result<i32> {
        let mut attr = [0u8; 128];
        put32(&mut attr, 0, MAP_TYPE_REUSEPORT_SOCKARRAY);
        put32(&mut attr, 4, 4);
        put32(&mut attr, 8, 8);
        put32(&mut attr, 12, entries);
        bpf(BPF_MAP_CREATE, &mut attr)
    }

    pub fn map_update(map: i32, key: u32, value: u64) -> std::io::Result<()> {
        let mut attr = [0u8; 128];
        put32(&mut attr, 0, map as u32);
        put64(&mut attr, 8, &key as *const u32 as u64);
        put64(&mut attr, 16, &value as *const u64 as u64);
        put64(&mut attr, 24, 0);
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(|_| ())
    }

    pub fn prog_load(insns: &[Insn]) -> std::io::Result<i32> {
        let license = b"Dual MIT/GPL\0";
        let mut log = vec![0u8; 4096];
        let mut attr = [0u8; 128];
        put32(&mut attr, 0, PROG_TYPE_SK_REUSEPORT);
        put32(&mut attr, 4, insns.len() as u32);
        put64(&mut attr, 8, insns.as_ptr() as u64);
        put64(&mut attr, 16, license.as_ptr() as u64);
        put32(&mut attr, 24, 1);
        put32(&mut attr, 28, log.len() as u32);
        put64(&mut attr, 32, log.as_mut_ptr() as u64);
        put32(&mut attr, 68, ATTACH_SK_REUSEPORT_SELECT);
        bpf(BPF_PROG_LOAD, &mut attr).map_err(|e| {
            let end = log.iter().position(|b| *b == 0).unwrap_or(0);
            let verifier = String::from_utf8_lossy(&log[..end]);
            let last = verifier.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
            if last.is_empty() {
                e
            } else {
                std::io::Error::new(e.kind(), format!("{e} (verifier: {last})"))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    fn reuseport_socket(port: u16) -> UdpSocket {
        let s = crate::udp_bind::bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)), true).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_millis(300))).unwrap();
        s
    }

    /// Where the kernel allows eBPF (root here): every datagram lands on the
    /// socket its index byte names, short and long headers alike.
    #[test]
    fn the_program_sends_each_datagram_to_the_socket_its_id_names() {
        let a = reuseport_socket(0);
        let port = a.local_addr().unwrap().port();
        let b = reuseport_socket(port);
        let mut state = SteeringState::new(2, true);
        if state.add_socket(0, 1, a.as_raw_fd()) != Steering::Ebpf {
            eprintln!("eBPF not available here: {}", state.reason());
            return;
        }
        assert_eq!(state.add_socket(1, 1, b.as_raw_fd()), Steering::Ebpf, "{}", state.reason());
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut buf = [0u8; 64];
        for round in 0..20u8 {
            // A short header: flags, then the ID; index byte at ID offset 1.
            let mut short = vec![0x40u8; 40];
            short[2] = round;
            client.send_to(&short, ("127.0.0.1", port)).unwrap();
            let want = if round % 2 == 0 { &a } else { &b };
            let (n, _) = want.recv_from(&mut buf).unwrap_or_else(|_| panic!("short header {round} on its socket"));
            assert_eq!(n, 40);
            // A long header: flags, version, ID length, then the ID.
            let mut long = vec![0u8; 1200];
            long[0] = 0xc0;
            long[5] = 8;
            long[7] = round + 1;
            client.send_to(&long, ("127.0.0.1", port)).unwrap();
            let want = if round % 2 == 1 { &a } else { &b };
            let (n, _) = want.recv_from(&mut buf).unwrap_or_else(|_| panic!("long header {round} on its socket"));
            assert_eq!(n, buf.len(), "the datagram fills the receive buffer (the rest is cut off)");
        }
    }
}
