// deploy/quic-lb-nft.sh, the QUIC-LB ruleset generator, without root: the
// committed example is what the script writes for the command in its
// header, the byte offsets are the ones the QUIC-LB plaintext format puts
// the server ID at, and every bad option gets one line naming it. Loading
// and routing through the ruleset: test/integration/nft-balancer.test.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const GENERATOR = path.join(ROOT, 'deploy', 'quic-lb-nft.sh');

function generate(args: string[]) {
  const r = spawnSync('bash', [GENERATOR, ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr.trim() };
}

describe('deploy/quic-lb-nft.sh', () => {
  it('the committed example is the script\'s output for the command in its header', () => {
    const example = fs.readFileSync(path.join(ROOT, 'deploy', 'quic-lb.example.nft'), 'utf8');
    const command = /^# written by: deploy\/quic-lb-nft\.sh (.*)$/m.exec(example)?.[1];
    assert.ok(command, 'the example names the command that wrote it');
    const r = generate(command.split(' '));
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, example);
  });

  it('reads the configuration and server ID where QUIC-LB puts them: byte 1 (short header) or byte 6 (long header) of the UDP payload, then the ID', () => {
    const r = generate(['--vip', '2001:db8::10', '--port', '4433', '--ingress', 'eth0', '--config-id', '6', '--server', '00112233445566778899aabbccddee=2001:db8:1::2@eth1']);
    assert.equal(r.status, 0, r.stderr);
    // @th counts bits from the UDP header (8 bytes): the payload starts at bit 64.
    assert.match(r.stdout, /ip6 daddr 2001:db8::10 udp dport 4433 jump quic/);
    assert.match(r.stdout, /@th,64,1 0 @th,72,8 & 0xe0 == 0xc0 @th,80,120 vmap \{ 0x00112233445566778899aabbccddee : goto id_0 \}/);
    assert.match(r.stdout, /@th,64,1 1 @th,104,8 >= 16 @th,112,8 & 0xe0 == 0xc0 @th,120,120 vmap/);
    assert.match(r.stdout, /fwd ip6 to 2001:db8:1::2 device "eth1"/);
  });

  const bad: [string, string[], RegExp][] = [
    ['no --vip', ['--ingress', 'eth0', '--config-id', '1', '--server', 'ab=10.0.0.2@eth1'], /--vip is required/],
    ['a --vip that is no address', ['--vip', 'vip', '--ingress', 'eth0', '--config-id', '1', '--server', 'ab=10.0.0.2@eth1'], /--vip must be an IPv4 or IPv6 address, got 'vip'/],
    ['no --ingress', ['--vip', '10.0.0.1', '--config-id', '1', '--server', 'ab=10.0.0.2@eth1'], /--ingress is required/],
    ['--config-id 7', ['--vip', '10.0.0.1', '--ingress', 'eth0', '--config-id', '7', '--server', 'ab=10.0.0.2@eth1'], /--config-id must be 0 to 6 \(7 marks IDs no balancer can route\), got '7'/],
    ['--port 70000', ['--vip', '10.0.0.1', '--ingress', 'eth0', '--config-id', '1', '--port', '70000', '--server', 'ab=10.0.0.2@eth1'], /--port must be 1 to 65535, got '70000'/],
    ['no --server', ['--vip', '10.0.0.1', '--ingress', 'eth0', '--config-id', '1'], /at least one --server is required/],
    ['a --server without its link', ['--vip', '10.0.0.1', '--ingress', 'eth0', '--config-id', '1', '--server', 'ab=10.0.0.2'], /--server takes ID=ADDR@DEV/],
    ['a server ID of half a byte', ['--vip', '10.0.0.1', '--ingress', 'eth0', '--config-id', '1', '--server', 'abc=10.0.0.2@eth1'], /--server abc: the server ID must be whole bytes/],
    ['a server ID of 16 bytes', ['--vip', '10.0.0.1', '--ingress', 'eth0', '--config-id', '1', '--server', '00'.repeat(16) + '=10.0.0.2@eth1'], /the server ID must be 1 to 15 bytes/],
    ['server IDs of two lengths', ['--vip', '10.0.0.1', '--ingress', 'eth0', '--config-id', '1', '--server', 'ab=10.0.0.2@eth1', '--server', 'abcd=10.0.0.3@eth1'], /--server abcd: every server ID must be as long as the first \(ab, 1 byte\(s\)\)/],
    ['a server ID twice (case aside)', ['--vip', '10.0.0.1', '--ingress', 'eth0', '--config-id', '1', '--server', 'ab=10.0.0.2@eth1', '--server', 'AB=10.0.0.3@eth1'], /--server ab: listed twice/],
    ['a machine address of the other family', ['--vip', '10.0.0.1', '--ingress', 'eth0', '--config-id', '1', '--server', 'ab=2001:db8::2@eth1'], /'2001:db8::2' is not an address of the VIP's family \(ip\)/],
    ['an unknown option', ['--vip', '10.0.0.1', '--ingress', 'eth0', '--config-id', '1', '--server', 'ab=10.0.0.2@eth1', '--weight', '2'], /unknown option --weight/],
  ];
  for (const [what, args, message] of bad) {
    it(`${what}: exit 2 and one line naming the option`, () => {
      const r = generate(args);
      assert.equal(r.status, 2);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, message);
      assert.equal(r.stderr.split('\n').length, 1);
    });
  }
});
