package io.steelyard.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;
import org.springframework.asm.ClassReader;
import org.springframework.asm.ClassVisitor;
import org.springframework.asm.Handle;
import org.springframework.asm.MethodVisitor;
import org.springframework.asm.Opcodes;
import org.springframework.asm.Type;
import org.springframework.boot.grpc.client.autoconfigure.GrpcClientAutoConfiguration;
import org.springframework.boot.grpc.server.autoconfigure.GrpcServerAutoConfiguration;
import org.springframework.grpc.server.lifecycle.GrpcServerLifecycle;

/**
 * Spring gRPC 1.0.x is built against grpc-java 1.77; steelyard runs it on its own grpc-java
 * (1.85.1). This test reads every class of spring-grpc-core and of its server and client
 * auto-configuration and checks that each grpc-java class, method, constructor and field they
 * refer to exists in the grpc-java on this classpath, so a grpc upgrade that breaks Spring gRPC
 * fails here instead of in an application. References into grpc modules that are not on the
 * classpath at all (grpc-netty-shaded, grpc-servlet, grpc-kotlin: optional for Spring gRPC) are
 * skipped.
 */
class SpringGrpcLinkageTest {

  /** A reference from Spring gRPC's bytecode to a member of a grpc-java class. */
  private record Ref(String from, String owner, String name, String descriptor, boolean field) {}

  @Test
  void everyGrpcJavaMemberSpringGrpcUsesExistsInOurGrpcJava() throws Exception {
    List<Ref> refs = new ArrayList<>();
    for (Class<?> anchor : List.of(
        GrpcServerLifecycle.class, GrpcServerAutoConfiguration.class, GrpcClientAutoConfiguration.class)) {
      refs.addAll(grpcReferences(jarOf(anchor)));
    }
    ClassLoader loader = getClass().getClassLoader();
    Set<String> missing = new TreeSet<>();
    int checked = 0;
    for (Ref r : new LinkedHashSet<>(refs)) {
      String className = r.owner().replace('/', '.');
      Class<?> owner;
      try {
        owner = Class.forName(className, false, loader);
      } catch (ClassNotFoundException e) {
        if (packagePresent(loader, r.owner())) {
          missing.add("class " + className + " (used by " + r.from() + ")");
        }
        continue;
      }
      checked++;
      if (!exists(owner, r)) {
        missing.add(className + "." + r.name() + r.descriptor() + " (used by " + r.from() + ")");
      }
    }
    assertThat(checked).as("grpc-java references checked").isGreaterThan(100);
    assertThat(missing).as("grpc-java members Spring gRPC uses that grpc-java lacks").isEmpty();
  }

  @Test
  void theCheckTellsAMissingMemberFromAPresentOne() throws Exception {
    Class<?> builder = io.grpc.ManagedChannelBuilder.class;
    assertThat(exists(builder, new Ref("t", "io/grpc/ManagedChannelBuilder",
        "defaultLoadBalancingPolicy", "(Ljava/lang/String;)Lio/grpc/ManagedChannelBuilder;", false)))
        .isTrue();
    assertThat(exists(builder, new Ref("t", "io/grpc/ManagedChannelBuilder",
        "defaultLoadBalancingPolicy", "(I)Lio/grpc/ManagedChannelBuilder;", false)))
        .isFalse();
    // Inherited through the class hierarchy, as the JVM resolves it.
    assertThat(exists(io.grpc.netty.NettyChannelBuilder.class, new Ref("t", "io/grpc/netty/NettyChannelBuilder",
        "usePlaintext", "()Lio/grpc/ManagedChannelBuilder;", false)))
        .isTrue();
  }

  private static Path jarOf(Class<?> c) throws URISyntaxException {
    return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
  }

  private static List<Ref> grpcReferences(Path jar) throws IOException {
    List<Ref> refs = new ArrayList<>();
    try (JarFile file = new JarFile(jar.toFile())) {
      Enumeration<JarEntry> entries = file.entries();
      while (entries.hasMoreElements()) {
        JarEntry entry = entries.nextElement();
        if (!entry.getName().endsWith(".class") || entry.getName().contains("module-info")) {
          continue;
        }
        try (InputStream in = file.getInputStream(entry)) {
          String from = entry.getName();
          new ClassReader(in).accept(new ClassVisitor(Opcodes.ASM9) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String descriptor,
                String signature, String[] exceptions) {
              return new MethodVisitor(Opcodes.ASM9) {
                @Override
                public void visitMethodInsn(int opcode, String owner, String n, String d, boolean itf) {
                  add(owner, n, d, false);
                }

                @Override
                public void visitFieldInsn(int opcode, String owner, String n, String d) {
                  add(owner, n, d, true);
                }

                @Override
                public void visitInvokeDynamicInsn(String n, String d, Handle bsm, Object... args) {
                  for (Object a : args) {
                    if (a instanceof Handle h) {
                      add(h.getOwner(), h.getName(), h.getDesc(), h.getTag() <= Opcodes.H_PUTSTATIC);
                    }
                  }
                }

                private void add(String owner, String n, String d, boolean field) {
                  if (owner.startsWith("io/grpc/")) {
                    refs.add(new Ref(from, owner, n, d, field));
                  }
                }
              };
            }
          }, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        }
      }
    }
    return refs;
  }

  private static boolean packagePresent(ClassLoader loader, String internalName) {
    String pkg = internalName.substring(0, internalName.lastIndexOf('/') + 1);
    try {
      return loader.getResources(pkg).hasMoreElements();
    } catch (IOException e) {
      return true;
    }
  }

  /** Whether {@code owner} or a supertype declares the member (as the JVM resolves it). */
  private static boolean exists(Class<?> owner, Ref r) {
    Deque<Class<?>> todo = new ArrayDeque<>();
    Set<Class<?>> seen = new HashSet<>();
    todo.add(owner);
    while (!todo.isEmpty()) {
      Class<?> c = todo.poll();
      if (!seen.add(c)) {
        continue;
      }
      try {
        if (r.field()) {
          for (Field f : c.getDeclaredFields()) {
            if (f.getName().equals(r.name()) && Type.getDescriptor(f.getType()).equals(r.descriptor())) {
              return true;
            }
          }
        } else if (r.name().equals("<init>")) {
          for (Constructor<?> k : c.getDeclaredConstructors()) {
            if (Type.getConstructorDescriptor(k).equals(r.descriptor())) {
              return true;
            }
          }
          return false; // constructors are not inherited
        } else {
          for (Method m : c.getDeclaredMethods()) {
            if (m.getName().equals(r.name()) && Type.getMethodDescriptor(m).equals(r.descriptor())) {
              return true;
            }
          }
        }
      } catch (LinkageError e) {
        return false;
      }
      if (c.getSuperclass() != null) {
        todo.add(c.getSuperclass());
      }
      todo.addAll(List.of(c.getInterfaces()));
    }
    // Methods of Object are reachable from interfaces too.
    return !r.field() && owner.isInterface() && exists(Object.class, r);
  }
}
