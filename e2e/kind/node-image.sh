#!/usr/bin/env bash
# Builds ringfire's kind node image with no registry: a Debian base made by
# debootstrap from Debian's packages (systemd, runc, the CNI plugins, iptables),
# the project's containerd, and the control plane's kubelet, kubeadm and kubectl
# (e2e/tools, e2e/node, e2e/kind/tools); the images kubeadm runs (API server,
# controller manager, scheduler, etcd, kube-proxy, CoreDNS, pause) are made
# from the same binaries with mkimage and carried in /kind/images, which the
# node loads into its containerd at boot (node/ringfire-images.service).
#
#   e2e/kind/node-image.sh      builds (or finds) the image; prints its name last
#
# Root (debootstrap, the rootfs's owners) and a running dockerd (the image is
# made with `docker import`). The Debian base is cached by its package list,
# the image by the hash of every input, so a second run returns at once.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { echo "kind/node-image.sh: $*" >&2; }
[[ $(id -u) == 0 ]] || { log "needs root (debootstrap)"; exit 1; }
command -v debootstrap >/dev/null || apt-get install -y debootstrap >&2

bin="$("$here/build.sh" | tail -n 1)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/ringfire/kind"
mkdir -p "$cache"

# The Debian base. bookworm, as the machines that build it run.
suite=bookworm
mirror="${RINGFIRE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
packages=systemd,systemd-sysv,dbus,iptables,iproute2,conntrack,ethtool,socat,util-linux,mount,kmod,procps,ca-certificates,runc,containernetworking-plugins,libseccomp2,iputils-ping
base_key="$(echo "$suite $packages" | sha256sum | cut -c1-16)"
base="$cache/base-$base_key.tar"
if [[ ! -f $base ]]; then
	log "debootstrap $suite with $packages (a few minutes, once)"
	t0=$SECONDS
	root="$(mktemp -d "$cache/base.XXXX")"
	debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >&2
	# What a node needs none of, and what must differ per node.
	rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/*
	: >"$root/etc/machine-id"
	rm -f "$root/var/lib/dbus/machine-id"
	tar -C "$root" --numeric-owner -cf "$base.tmp" .
	rm -rf "$root"
	mv -f "$base.tmp" "$base"
	log "debootstrap took $((SECONDS - t0))s"
fi

kube_version="$("$bin/kubeadm" version -o short)"
# The images kubeadm asks for, by its own list: registry.k8s.io/NAME:TAG.
mapfile -t wanted < <("$bin/kubeadm" config images list --kubernetes-version "$kube_version" 2>/dev/null)
[[ ${#wanted[@]} -ge 7 ]] || { log "kubeadm config images list gave ${wanted[*]:-nothing}"; exit 1; }

key="$({
	echo "$base_key $kube_version ${wanted[*]}"
	cat "$here/node-image.sh" "$here"/node/*
	for b in kubelet kubeadm kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd containerd containerd-shim-runc-v2 ctr coredns-kind pause; do
		sha256sum <"$bin/$b"
	done
} | sha256sum | cut -c1-16)"
image="ringfire.local/kind-node:$key"
if docker image inspect "$image" >/dev/null 2>&1; then
	echo "$image"
	exit 0
fi

log "assembling $image"
t0=$SECONDS
work="$(mktemp -d "$cache/node.XXXX")"
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root"
tar -C "$root" --numeric-owner -xf "$base"

install -m 0755 "$bin/kubelet" "$bin/kubeadm" "$bin/kubectl" "$root/usr/bin/"
install -m 0755 "$bin/containerd" "$bin/containerd-shim-runc-v2" "$bin/ctr" "$root/usr/local/bin/"
install -m 0755 "$here/node/entrypoint" "$root/usr/local/bin/entrypoint"
install -d "$root/etc/containerd" "$root/etc/cni/net.d" "$root/kind/images" "$root/kind/manifests" "$root/etc/systemd/system/multi-user.target.wants"
pause_image=
for ref in "${wanted[@]}"; do [[ $ref == */pause:* ]] && pause_image="$ref"; done
sed "s|PAUSE_IMAGE|$pause_image|" "$here/node/containerd.toml" >"$root/etc/containerd/config.toml"
install -m 0644 "$here/node/containerd.service" "$here/node/ringfire-images.service" "$here/node/kubelet.service" "$here/node/kubelet.slice" "$root/etc/systemd/system/"
for unit in containerd.service ringfire-images.service kubelet.service; do
	ln -sf "/etc/systemd/system/$unit" "$root/etc/systemd/system/multi-user.target.wants/$unit"
done
install -m 0644 "$here/node/default-storage.yaml" "$root/kind/manifests/default-storage.yaml"
echo "$kube_version" >"$root/kind/version"
# A container needs none of these, and some hang or fail without hardware.
for unit in getty.target console-getty.service apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer e2scrub_reap.service systemd-udevd.service systemd-udev-trigger.service systemd-modules-load.service systemd-remount-fs.service systemd-resolved.service systemd-timesyncd.service; do
	ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
printf 'net.ipv4.ip_forward = 1\nnet.ipv4.conf.all.rp_filter = 0\nnet.ipv4.conf.default.rp_filter = 0\n' >"$root/etc/sysctl.d/10-ringfire-node.conf"

# files_of prints IMAGEPATH=HOSTPATH for each binary of the base (in
# /usr/local/bin, which the images' PATH holds) and each shared library it
# loads, resolved inside the base; once each.
files_of() {
	local f lib
	for f in "$@"; do
		echo "/usr/local/bin/${f##*/}=$root$(chroot "$root" readlink -f "$f")"
		while read -r lib; do
			echo "$lib=$root$(chroot "$root" readlink -f "$lib")"
		done < <(chroot "$root" ldd "$f" | awk '/=> \// {print $3} /^\t\/lib/ {print $1}')
	done | sort -u
}

mk() { "$bin/mkimage" "$@"; }
for ref in "${wanted[@]}"; do
	name="${ref##*/}"
	name="${name%%:*}"
	out="$root/kind/images/$name.tar"
	case "$name" in
	kube-apiserver | kube-controller-manager | kube-scheduler)
		mk -name "$ref" -out "$out" -file "/usr/local/bin/$name=$bin/$name" ;;
	etcd)
		mk -name "$ref" -out "$out" -file "/usr/local/bin/etcd=$bin/etcd" ;;
	coredns)
		mk -name "$ref" -out "$out" -file "/coredns=$bin/coredns-kind" -entrypoint /coredns ;;
	pause)
		mk -name "$ref" -out "$out" -file "/pause=$bin/pause" -entrypoint /pause ;;
	kube-proxy)
		# kube-proxy's iptables mode calls iptables(-save,-restore) and conntrack:
		# Debian's nft-backed multi-call binary under each name, with its
		# libraries and extensions.
		args=(-name "$ref" -out "$out" -file "/usr/local/bin/kube-proxy=$bin/kube-proxy")
		while read -r pair; do args+=(-file "$pair"); done < <(files_of /usr/sbin/xtables-nft-multi /usr/sbin/conntrack)
		# The extensions, and what they load (statistic, for one, needs libm).
		while read -r pair; do args+=(-file "$pair"); done < <(
			for ext in "$root"/usr/lib/x86_64-linux-gnu/xtables/*.so; do
				echo "${ext#"$root"}=$ext"
				chroot "$root" ldd "${ext#"$root"}" | awk '/=> \// {print $3}' | while read -r lib; do
					echo "$lib=$root$(chroot "$root" readlink -f "$lib")"
				done
			done | sort -u | grep -v -F -x -f <(files_of /usr/sbin/xtables-nft-multi /usr/sbin/conntrack))
		for n in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
			args+=(-file "/usr/local/bin/$n=$root/usr/sbin/xtables-nft-multi")
		done
		mk "${args[@]}" ;;
	*)
		log "kubeadm wants $ref, which this script does not make"; exit 1 ;;
	esac
done

tar -C "$root" --numeric-owner -c . | docker import \
	--change 'ENV container=docker' \
	--change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
	- "$image" >&2
log "built $image in $((SECONDS - t0))s"
echo "$image"
