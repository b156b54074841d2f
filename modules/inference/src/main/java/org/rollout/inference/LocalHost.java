package org.rollout.inference;

import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.Collections;

/** Whether a server's host is this machine ({@code shared_disk_servers = local}). */
final class LocalHost {
    private LocalHost() {}

    /**
     * True for {@code localhost}, a loopback address, this host's name, or an address of one of its
     * network interfaces. A name that does not resolve is not local.
     */
    static boolean isLocal(String host) {
        String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        try {
            if (h.equalsIgnoreCase("localhost")
                    || h.equalsIgnoreCase(InetAddress.getLocalHost().getHostName())) {
                return true;
            }
        } catch (UnknownHostException e) {
            // this host has no resolvable name: compare addresses only
        }
        try {
            for (InetAddress a : InetAddress.getAllByName(h)) {
                if (a.isLoopbackAddress() || a.isAnyLocalAddress()) {
                    return true;
                }
                for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                    if (Collections.list(ni.getInetAddresses()).contains(a)) {
                        return true;
                    }
                }
            }
        } catch (UnknownHostException | SocketException e) {
            return false;
        }
        return false;
    }
}
