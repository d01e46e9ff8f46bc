export * from "../../omp/node_modules/@oh-my-pi/pi-natives/native/desktop.js";
